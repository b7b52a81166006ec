// Drives an agentscope-server with the official AG-UI TypeScript client (@ag-ui/client 1.0)
// and prints ONE JSON object on stdout describing what the client saw. Run by
// tests/agui_client.rs:
//
//     node tests/agui-client/client.test.mjs http://127.0.0.1:PORT
//
// The client's own event handling is left as it ships: enforcement (schema parse of every
// event, stripping unknown material with a warning), verification (event ordering rules)
// and the default apply stage that builds `agent.messages`. Nothing here repairs or filters
// what the server sends.
//
// Scenarios (each on its own thread, run in this order; the Rust side scripts the model in
// the same order):
//   a_stream  : "Hello" -> a streamed text answer
//   b_tool    : the model calls `calculator`, then answers
//   c_approve : the model calls `delete_files` (needs approval) -> interrupt; resume approving
//   d_reject  : the same, resume rejecting with a reason
//   e_error   : the model fails -> RUN_ERROR
//   f_in_doubt: agent `payments`, thread agui-f-in-doubt, whose approved `pay` call the Rust
//               side cut short while it ran: a new client runs without messages -> the
//               call-in-doubt interrupt; resume with {"action": "retry"} -> the call runs
//               again and the model answers
//
// Output: {"client": {...}, "scenarios": {name: {threadId, runs: [run...], messages}},
// "failures": [...]}. Each run holds the event types in order, the events themselves (as the
// client delivered them to subscribers), a summary of the key fields, what the server put on
// the wire (request body and every SSE data frame), console warnings the client printed, and
// whether runAgent resolved or rejected.
//
// Exit status: 0 when every run went as far as the client is concerned (no rejection, no
// timeout; in e_error a rejection that is not a validation error is allowed and recorded);
// 1 with the reasons on stderr otherwise (the JSON is still printed for diagnosis); 2 on a
// usage error.

import { readFileSync } from "node:fs";
import { HttpAgent, AGUIError, PROTOCOL_VERSION, buildResumeArray, getRunOutcome } from "@ag-ui/client";
// The schemas the client validates with (@ag-ui/core comes with @ag-ui/client): only used to
// point at the offending frame when the client reports a schema error.
import { EventSchema } from "@ag-ui/core/schemas";

const RUN_TIMEOUT_MS = Number(process.env.AGUI_RUN_TIMEOUT_MS ?? 30000);

const base = process.argv[2];
if (!base || !/^https?:\/\//.test(base)) {
  process.stderr.write("usage: node client.test.mjs <server base url, e.g. http://127.0.0.1:3000>\n");
  process.exit(2);
}
const agentUrl = `${base.replace(/\/+$/, "")}/agents/assistant`;
const paymentsUrl = `${base.replace(/\/+$/, "")}/agents/payments`;

// ---------------------------------------------------------------------------------------
// Console capture: the client reports stripped/unrecognised material and failed runs with
// console.warn / console.error. Record them against the run in progress (and still show them
// on stderr, never on stdout, which carries the JSON).

let currentRun = null;
const orphanConsole = [];
function captureConsole(kind) {
  return (...args) => {
    const text = args
      .map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === "string" ? a : safeJson(a)))
      .join(" ");
    (currentRun ? currentRun[kind] : orphanConsole).push(text);
    process.stderr.write(`[client console.${kind === "warnings" ? "warn" : kind === "errors" ? "error" : "log"}] ${text}\n`);
  };
}
console.warn = captureConsole("warnings");
console.error = captureConsole("errors");
console.log = captureConsole("logs");
console.info = captureConsole("logs");
console.debug = captureConsole("logs");

function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

function describeError(error) {
  if (error === undefined || error === null) return null;
  return {
    name: error?.name ?? null,
    constructor: error?.constructor?.name ?? null,
    message: error?.message ?? String(error),
    isValidationError: isValidationError(error),
    httpStatus: error?.status ?? null,
    httpPayload: error?.payload === undefined ? null : clone(error.payload),
    issues: Array.isArray(error?.issues) ? clone(error.issues) : null,
  };
}

// A validation error is one the client raises against the stream it received: AGUIError from
// the verifier (ordering rules), or a ZodError from the schema parse of an event.
function isValidationError(error) {
  return error instanceof AGUIError || error?.name === "AGUIError" || error?.name === "ZodError" || Array.isArray(error?.issues);
}

// ---------------------------------------------------------------------------------------
// Wire recording: a fetch that hands the client an untouched copy of the response body and
// keeps the other copy to record the raw SSE frames the server wrote.

function recordingFetch(getRun) {
  return async (url, init) => {
    const run = getRun();
    const wire = { url, method: init?.method ?? "GET", request: null, status: null, contentType: null, frames: [], rawTail: "" };
    if (run) run.wire = wire;
    try {
      wire.request = init?.body ? JSON.parse(init.body) : null;
    } catch {
      wire.request = String(init?.body);
    }
    const response = await fetch(url, init);
    wire.status = response.status;
    wire.contentType = response.headers.get("content-type");
    if (!response.body) return response;
    const [forClient, forRecord] = response.body.tee();
    const done = (async () => {
      const reader = forRecord.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      try {
        for (;;) {
          const { done: end, value } = await reader.read();
          if (end) break;
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            wire.frames.push(parseFrame(buffer.slice(0, cut)));
            buffer = buffer.slice(cut + 2);
          }
        }
        buffer += decoder.decode();
      } catch (error) {
        wire.readError = String(error?.message ?? error);
      }
      if (buffer.trim() !== "") wire.rawTail = buffer;
    })();
    if (run) run.wireDone = done;
    return new Response(forClient, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

function parseFrame(frame) {
  const data = frame
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(5).replace(/^ /, ""))
    .join("\n");
  if (data === "") return { nonData: frame };
  try {
    return JSON.parse(data);
  } catch {
    return { unparsable: data };
  }
}

// For a schema (zod) error, which frame the server sent is the culprit: the first one the
// protocol's own event schema rejects for a reason other than unknown keys (those the client
// strips with a warning instead).
function firstInvalidFrame(frames) {
  for (const [index, frame] of frames.entries()) {
    const parsed = EventSchema.safeParse(frame);
    if (parsed.success) continue;
    const issues = parsed.error.issues.filter((i) => i.code !== "unrecognized_keys");
    if (issues.length > 0) return { index, frame, issues };
  }
  return null;
}

// ---------------------------------------------------------------------------------------
// Summaries of the events the client delivered.

function summarize(events) {
  const s = {
    runStarted: null,
    steps: [],
    texts: [],
    reasoning: [],
    toolCalls: [],
    toolResults: [],
    activities: [],
    custom: [],
    snapshotMessages: null,
    runFinished: null,
    outcome: null,
    runError: null,
  };
  const texts = new Map();
  const reasonings = new Map();
  const calls = new Map();
  for (const e of events) {
    switch (e.type) {
      case "RUN_STARTED":
        s.runStarted = { threadId: e.threadId, runId: e.runId, protocolVersion: e.protocolVersion ?? null };
        break;
      case "STEP_STARTED":
      case "STEP_FINISHED":
        s.steps.push(`${e.type} ${e.stepName}`);
        break;
      case "TEXT_MESSAGE_START": {
        const t = { messageId: e.messageId, role: e.role ?? null, text: "", deltas: [], ended: false };
        texts.set(e.messageId, t);
        s.texts.push(t);
        break;
      }
      case "TEXT_MESSAGE_CONTENT": {
        const t = texts.get(e.messageId);
        if (t) {
          t.text += e.delta;
          t.deltas.push(e.delta);
        }
        break;
      }
      case "TEXT_MESSAGE_END": {
        const t = texts.get(e.messageId);
        if (t) t.ended = true;
        break;
      }
      case "REASONING_MESSAGE_START": {
        const r = { messageId: e.messageId, role: e.role ?? null, text: "", ended: false };
        reasonings.set(e.messageId, r);
        s.reasoning.push(r);
        break;
      }
      case "REASONING_MESSAGE_CONTENT": {
        const r = reasonings.get(e.messageId);
        if (r) r.text += e.delta;
        break;
      }
      case "REASONING_MESSAGE_END": {
        const r = reasonings.get(e.messageId);
        if (r) r.ended = true;
        break;
      }
      case "TOOL_CALL_START": {
        const c = {
          toolCallId: e.toolCallId,
          toolCallName: e.toolCallName,
          parentMessageId: e.parentMessageId ?? null,
          args: "",
          parsedArgs: null,
          ended: false,
        };
        calls.set(e.toolCallId, c);
        s.toolCalls.push(c);
        break;
      }
      case "TOOL_CALL_ARGS": {
        const c = calls.get(e.toolCallId);
        if (c) c.args += e.delta;
        break;
      }
      case "TOOL_CALL_END": {
        const c = calls.get(e.toolCallId);
        if (c) {
          c.ended = true;
          try {
            c.parsedArgs = JSON.parse(c.args);
          } catch {
            c.parsedArgs = null;
          }
        }
        break;
      }
      case "TOOL_CALL_RESULT":
        s.toolResults.push({ messageId: e.messageId, toolCallId: e.toolCallId, content: e.content, role: e.role ?? null });
        break;
      case "ACTIVITY_SNAPSHOT":
        s.activities.push({ messageId: e.messageId, activityType: e.activityType, content: clone(e.content) });
        break;
      case "CUSTOM":
        s.custom.push({ name: e.name, value: clone(e.value) });
        break;
      case "MESSAGES_SNAPSHOT":
        s.snapshotMessages = clone(e.messages);
        break;
      case "RUN_FINISHED":
        s.runFinished = {
          threadId: e.threadId,
          runId: e.runId,
          result: e.result === undefined ? null : clone(e.result),
          outcome: e.outcome === undefined ? null : clone(e.outcome),
        };
        // The client's own reading of the outcome.
        s.outcome = clone(getRunOutcome(e)) ?? null;
        break;
      case "RUN_ERROR":
        s.runError = { message: e.message, code: e.code ?? null };
        break;
      default:
        break;
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------
// One run of an agent, fully recorded.

async function run(agent, label, params) {
  const rec = {
    label,
    types: [],
    summary: null,
    resolved: false,
    rejected: false,
    rejection: null,
    timedOut: false,
    runAgentResult: null,
    newMessages: null,
    subscriber: { runFinished: null, runError: null, runFailed: null, finalized: false },
    pendingInterrupts: null,
    messagesAfter: null,
    warnings: [],
    errors: [],
    logs: [],
    events: [],
    wire: null,
  };
  currentRun = rec;
  const subscriber = {
    onEvent({ event }) {
      rec.events.push(clone(event));
    },
    onRunFinishedEvent(p) {
      rec.subscriber.runFinished = {
        outcome: p.outcome,
        result: p.result === undefined ? null : clone(p.result),
        interrupts: p.interrupts === undefined ? null : clone(p.interrupts),
        pendingToolCallIds: p.pendingToolCallIds === undefined ? null : clone(p.pendingToolCallIds),
      };
    },
    onRunErrorEvent({ event }) {
      rec.subscriber.runError = { message: event.message, code: event.code ?? null };
    },
    onRunFailed({ error }) {
      rec.subscriber.runFailed = describeError(error);
    },
    onRunFinalized() {
      rec.subscriber.finalized = true;
    },
  };
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve("timeout"), RUN_TIMEOUT_MS);
  });
  try {
    const outcome = await Promise.race([agent.runAgent(params, subscriber), timeout]);
    if (outcome === "timeout") {
      rec.timedOut = true;
      agent.abortRun();
    } else {
      rec.resolved = true;
      rec.runAgentResult = outcome.result === undefined ? null : clone(outcome.result);
      rec.newMessages = clone(outcome.newMessages);
    }
  } catch (error) {
    rec.rejected = true;
    rec.rejection = describeError(error);
  } finally {
    clearTimeout(timer);
  }
  if (rec.wireDone) {
    await Promise.race([rec.wireDone, new Promise((r) => setTimeout(r, 2000))]);
    delete rec.wireDone;
  }
  currentRun = null;
  rec.types = rec.events.map((e) => e.type);
  rec.summary = summarize(rec.events);
  rec.pendingInterrupts = clone(agent.pendingInterrupts);
  rec.messagesAfter = clone(agent.messages);
  return rec;
}

function newAgent(threadId, url = agentUrl) {
  return new HttpAgent({ url, threadId, fetch: recordingFetch(() => currentRun) });
}

// ---------------------------------------------------------------------------------------
// Scenarios.

const failures = [];

function expectClean(scenario, rec, { allowNonValidationRejection = false } = {}) {
  const where = `${scenario} / ${rec.label}`;
  if (rec.timedOut) failures.push(`${where}: runAgent did not finish within ${RUN_TIMEOUT_MS} ms (aborted)`);
  if (rec.rejected) {
    const e = rec.rejection;
    if (e?.isValidationError) {
      const culprit = e.issues ? firstInvalidFrame(rec.wire?.frames ?? []) : null;
      const context = culprit ? ` (wire frame #${culprit.index}: ${safeJson(culprit.frame).slice(0, 600)})` : "";
      failures.push(`${where}: the AG-UI client raised a validation error: ${e.constructor ?? e.name}: ${e.message}${context}`);
    } else if (!allowNonValidationRejection) {
      failures.push(`${where}: runAgent rejected: ${e?.name}: ${e?.message}`);
    }
  }
}

async function scenarioStream() {
  const threadId = "agui-a-stream";
  const agent = newAgent(threadId);
  agent.addMessage({ id: "a-user-1", role: "user", content: "Hello" });
  const r1 = await run(agent, "hello", { runId: "a-run-1" });
  expectClean("a_stream", r1);
  return { threadId, runs: [r1], messages: clone(agent.messages) };
}

async function scenarioTool() {
  const threadId = "agui-b-tool";
  const agent = newAgent(threadId);
  agent.addMessage({ id: "b-user-1", role: "user", content: "What is 6*7?" });
  const r1 = await run(agent, "calculate", { runId: "b-run-1" });
  expectClean("b_tool", r1);
  return { threadId, runs: [r1], messages: clone(agent.messages) };
}

async function scenarioApproval(name, threadId, prefix, question, response) {
  const agent = newAgent(threadId);
  agent.addMessage({ id: `${prefix}-user-1`, role: "user", content: question });
  const r1 = await run(agent, "ask", { runId: `${prefix}-run-1` });
  expectClean(name, r1);
  const runs = [r1];
  const pending = agent.pendingInterrupts ?? [];
  if (pending.length === 0) {
    failures.push(`${name}: the first run did not leave the client with pending interrupts (outcome: ${safeJson(r1.summary.outcome)})`);
    return { threadId, runs, resume: null, messages: clone(agent.messages) };
  }
  // The official helper: one answer per open interrupt.
  let resume;
  try {
    resume = buildResumeArray(pending, Object.fromEntries(pending.map((i) => [i.id, response])));
  } catch (error) {
    failures.push(`${name}: buildResumeArray failed: ${error?.message ?? error}`);
    return { threadId, runs, resume: null, messages: clone(agent.messages) };
  }
  const r2 = await run(agent, "resume", { runId: `${prefix}-run-2`, resume });
  expectClean(name, r2);
  runs.push(r2);
  return { threadId, runs, resume: clone(resume), messages: clone(agent.messages) };
}

async function scenarioError() {
  const threadId = "agui-e-error";
  const agent = newAgent(threadId);
  agent.addMessage({ id: "e-user-1", role: "user", content: "Please fail." });
  const r1 = await run(agent, "fail", { runId: "e-run-1" });
  // The run is expected to end in RUN_ERROR; whether runAgent then rejects is recorded, a
  // rejection is only a failure when it is a validation error.
  expectClean("e_error", r1, { allowNonValidationRejection: true });
  if (!r1.types.includes("RUN_ERROR")) failures.push(`e_error: the client did not observe RUN_ERROR (events: ${r1.types.join(", ")})`);
  return {
    threadId,
    runs: [r1],
    errorObservedAs: r1.rejected ? "runAgent rejected" : r1.subscriber.runError ? "RUN_ERROR event; runAgent resolved" : "not observed",
    messages: clone(agent.messages),
  };
}

// A client that knows nothing of the thread (a new page, a new HttpAgent) runs without new
// messages: the server answers with the interrupt of the call in doubt, which the client
// then answers like any interrupt.
async function scenarioInDoubt() {
  const name = "f_in_doubt";
  const threadId = "agui-f-in-doubt";
  const agent = newAgent(threadId, paymentsUrl);
  const r1 = await run(agent, "reconnect", { runId: "f-run-1" });
  expectClean(name, r1);
  const runs = [r1];
  const pending = agent.pendingInterrupts ?? [];
  if (pending.length === 0) {
    failures.push(`${name}: the first run did not leave the client with pending interrupts (outcome: ${safeJson(r1.summary.outcome)})`);
    return { threadId, runs, resume: null, messages: clone(agent.messages) };
  }
  let resume;
  try {
    const retry = { status: "resolved", payload: { action: "retry" } };
    resume = buildResumeArray(pending, Object.fromEntries(pending.map((i) => [i.id, retry])));
  } catch (error) {
    failures.push(`${name}: buildResumeArray failed: ${error?.message ?? error}`);
    return { threadId, runs, resume: null, messages: clone(agent.messages) };
  }
  const r2 = await run(agent, "retry", { runId: "f-run-2", resume });
  expectClean(name, r2);
  runs.push(r2);
  return { threadId, runs, resume: clone(resume), messages: clone(agent.messages) };
}

let clientVersion = null;
try {
  const pkg = JSON.parse(readFileSync(new URL("./node_modules/@ag-ui/client/package.json", import.meta.url), "utf8"));
  clientVersion = pkg.version;
} catch {
  clientVersion = null;
}

const scenarios = {};
const steps = [
  ["a_stream", scenarioStream],
  ["b_tool", scenarioTool],
  ["c_approve", () => scenarioApproval("c_approve", "agui-c-approve", "c", "Delete the old log files.", { status: "resolved", payload: { approved: true } })],
  ["d_reject", () => scenarioApproval("d_reject", "agui-d-reject", "d", "Delete the temp files.", { status: "resolved", payload: { approved: false, reason: "not now" } })],
  ["e_error", scenarioError],
  ["f_in_doubt", scenarioInDoubt],
];
for (const [name, fn] of steps) {
  try {
    scenarios[name] = await fn();
  } catch (error) {
    failures.push(`${name}: the scenario threw: ${error?.stack ?? error}`);
    scenarios[name] = { crashed: describeError(error) };
  }
}

const report = {
  client: { package: "@ag-ui/client", version: clientVersion, protocolVersion: PROTOCOL_VERSION, node: process.version, url: agentUrl },
  scenarios,
  consoleOutsideRuns: orphanConsole,
  failures,
};
process.stdout.write(`${JSON.stringify(report)}\n`);
if (failures.length > 0) {
  process.stderr.write(`AG-UI client failures (${failures.length}):\n${failures.map((f) => `  - ${f}`).join("\n")}\n`);
  process.exitCode = 1;
}
