// A small MCP server for what @modelcontextprotocol/server-everything cannot show on
// demand: a tool list that changes while a client is connected, a tool that reports
// whether a cancellation reached it, and tools that report the `_meta` a call carried.
// Written with the official TypeScript SDK (pinned by package-lock.json), so the protocol
// side is the SDK's, not ours. Over stdio; with the argument `http`, over streamable HTTP on
// 127.0.0.1:$PORT (path /mcp).
import { randomUUID } from "node:crypto";
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const server = new McpServer(
  { name: "agentscope-fixture", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);

// What the server saw cancelled: one entry per aborted `wait-for-cancel` call.
const cancellations = [];

server.registerTool(
  "add-tool",
  {
    description: "Adds a tool that greets by name; the server then sends tools/list_changed.",
    inputSchema: { name: z.string() },
  },
  async ({ name }) => {
    server.registerTool(
      name,
      { description: `Greets (added at run time as ${name}).`, inputSchema: { who: z.string() } },
      async ({ who }) => ({ content: [{ type: "text", text: `Hello, ${who}!` }] }),
    );
    return { content: [{ type: "text", text: `added ${name}` }] };
  },
);

server.registerTool(
  "wait-for-cancel",
  {
    description: "Reports progress once, then waits until the call is cancelled.",
    inputSchema: {},
  },
  async (_args, extra) => {
    const token = extra._meta?.progressToken;
    if (token !== undefined) {
      await server.server.notification(
        { method: "notifications/progress", params: { progressToken: token, progress: 1, message: "waiting" } },
        { relatedRequestId: extra.requestId },
      );
    }
    // Recorded in the abort listener itself (it runs inside `abort()`), so a request that
    // arrives right after the cancellation already sees it.
    const record = () =>
      cancellations.push({ requestId: extra.requestId, reason: String(extra.signal.reason ?? "") });
    await new Promise((resolve) => {
      if (extra.signal.aborted) {
        record();
        return resolve();
      }
      extra.signal.addEventListener("abort", () => { record(); resolve(); }, { once: true });
    });
    return { content: [{ type: "text", text: "cancelled" }] };
  },
);

server.registerTool(
  "idempotency-key",
  {
    description: "Returns the idempotency key the client sent in the request's _meta.",
    inputSchema: {},
  },
  async (_args, extra) => ({
    content: [{ type: "text", text: String(extra._meta?.["io.agentscope/idempotency-key"] ?? "none") }],
  }),
);

server.registerTool(
  "trace-context",
  {
    description: "Returns the W3C trace context the client sent in the request's _meta.",
    inputSchema: {},
  },
  async (_args, extra) => ({
    content: [{
      type: "text",
      text: JSON.stringify({
        traceparent: extra._meta?.traceparent ?? null,
        tracestate: extra._meta?.tracestate ?? null,
      }),
    }],
  }),
);

server.registerTool(
  "cancellations",
  { description: "Lists the wait-for-cancel calls that were cancelled.", inputSchema: {} },
  async () => ({ content: [{ type: "text", text: JSON.stringify(cancellations) }] }),
);

server.registerTool(
  "mixed-content",
  {
    description: "Returns one block of every MCP content kind.",
    inputSchema: {},
  },
  async () => ({
    content: [
      { type: "text", text: "plain text" },
      { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
      { type: "audio", data: "UklGRg==", mimeType: "audio/wav" },
      { type: "resource", resource: { uri: "file:///notes.txt", mimeType: "text/plain", text: "resource text" } },
      { type: "resource", resource: { uri: "file:///logo.png", mimeType: "image/png", blob: "iVBORw0KGgo=" } },
      { type: "resource", resource: { uri: "file:///data.bin", mimeType: "application/octet-stream", blob: "AAECAw==" } },
      { type: "resource_link", uri: "file:///report.pdf", name: "report", mimeType: "application/pdf", description: "The report" },
    ],
  }),
);

server.registerTool(
  "fail",
  { description: "Always returns an error result.", inputSchema: { why: z.string() } },
  async ({ why }) => ({ content: [{ type: "text", text: `failed: ${why}` }], isError: true }),
);

if (process.argv[2] === "http") {
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID() });
  await server.connect(transport);
  http
    .createServer(async (req, res) => {
      let body = "";
      for await (const chunk of req) body += chunk;
      await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
    })
    .listen(Number(process.env.PORT), "127.0.0.1");
} else {
  await server.connect(new StdioServerTransport());
}
