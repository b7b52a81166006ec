// The agentscope web chat: talks AG-UI to the server it is served from.
//
// Routes (relative to the page, so the router may be mounted anywhere):
//   GET  agents                               -> {"agents": [...]}
//   GET  agents/{agent}/threads/{threadId}     -> {threadId, messages, interrupts, awaits}
//   POST agents/{agent}  (RunAgentInput)      -> text/event-stream of AG-UI events
// No build step, no dependencies, nothing loaded from anywhere but this server.
"use strict";

(() => {
  const TOKEN_KEY = "agentscope.chat.token";
  const AGENT_KEY = "agentscope.chat.agent";

  const $ = (id) => document.getElementById(id);
  const ui = {
    agent: $("agent"),
    newThread: $("new-thread"),
    threadId: $("thread-id"),
    tokenForm: $("token-form"),
    token: $("token"),
    banner: $("banner"),
    transcript: $("transcript"),
    empty: $("empty"),
    interrupts: $("interrupts"),
    composer: $("composer"),
    message: $("message"),
    send: $("send"),
    stop: $("stop"),
    status: $("status"),
  };

  const state = {
    agent: "",
    threadId: "",
    running: false,
    loading: false,
    controller: null,
    // What is on screen, by id, so that streamed events, snapshots and history update the
    // same elements instead of adding copies.
    messages: new Map(), // messageId -> {kind, el, body}
    toolCalls: new Map(), // toolCallId -> {card, name, args, nameEl, argsEl, progressEl, resultEl, done}
    // Pending interrupts and the decisions taken on them (interruptId -> payload/status):
    // approvals ("tool_approval") and tool calls in doubt ("tool_in_doubt").
    interrupts: [],
    decisions: new Map(),
    // What the thread awaits when nothing is pending on screen: "run" means a run without
    // a new message continues it (the Continue button).
    awaits: "message",
    loadTicket: null,
  };

  // ---------------------------------------------------------------- utilities

  function uuid() {
    if (window.crypto && typeof window.crypto.randomUUID === "function") {
      return window.crypto.randomUUID();
    }
    // crypto.randomUUID needs a secure context (https or localhost); getRandomValues does not.
    const b = window.crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      node.append(child);
    }
    return node;
  }

  function prettyJson(raw) {
    if (raw === undefined || raw === null || raw === "") return "";
    if (typeof raw !== "string") return JSON.stringify(raw, null, 2);
    try {
      return JSON.stringify(JSON.parse(raw), null, 2);
    } catch {
      return raw; // still streaming, or not JSON: show as is
    }
  }

  function asText(content) {
    if (content === undefined || content === null) return "";
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content
        .map((part) => {
          if (typeof part === "string") return part;
          if (part && part.type === "text") return part.text || "";
          if (part && part.type) return `[${part.type}${part.mimeType ? ` ${part.mimeType}` : ""}]`;
          return "";
        })
        .join("");
    }
    return JSON.stringify(content);
  }

  function agentPath(...parts) {
    return ["agents", ...parts].map((p, i) => (i === 0 ? p : encodeURIComponent(p))).join("/");
  }

  // ------------------------------------------------------------------ hash

  function readHash() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ""));
    return { thread: params.get("thread") || "", agent: params.get("agent") || "" };
  }

  function writeHash() {
    const params = new URLSearchParams();
    params.set("thread", state.threadId);
    if (state.agent && ui.agent.options.length > 1) params.set("agent", state.agent);
    const hash = `#${params.toString()}`;
    // A full path: a bare "#..." would resolve against the page's <base>, not its URL.
    if (location.hash !== hash) history.replaceState(null, "", location.pathname + location.search + hash);
  }

  // ------------------------------------------------------------ HTTP + auth

  class HttpError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  function token() {
    try {
      return localStorage.getItem(TOKEN_KEY) || "";
    } catch {
      return "";
    }
  }

  async function api(path, options = {}) {
    const headers = new Headers(options.headers || {});
    const t = token();
    if (t) headers.set("Authorization", `Bearer ${t}`);
    const response = await fetch(path, { ...options, headers, cache: "no-store" });
    if (response.ok) return response;
    throw await httpError(response);
  }

  async function httpError(response) {
    let code = "";
    let message = "";
    const body = await response.text().catch(() => "");
    try {
      const parsed = JSON.parse(body);
      if (parsed && parsed.error) {
        code = parsed.error.code || "";
        message = parsed.error.message || "";
      }
    } catch {
      message = body.trim().slice(0, 300);
    }
    if (response.status === 401) showTokenForm();
    return new HttpError(response.status, code, message || response.statusText);
  }

  function describeError(error) {
    if (!(error instanceof HttpError)) {
      return `Could not reach the server: ${error && error.message ? error.message : error}`;
    }
    const detail = [error.code, error.message].filter(Boolean).join(": ");
    const conflicts = {
      interrupts_pending: "The agent is waiting for your answer above",
      calls_pending: "This thread has tool calls that have not run yet: press Continue first",
    };
    const friendly = (error.status === 409 && conflicts[error.code]) || {
      400: "The server rejected the request",
      401: "Authorization needed: enter the access token above",
      404: "Not found",
      409: "This thread is busy: a run is already active on it. Wait for it to finish, or start a new thread",
      413: "The message is too large",
      503: "The server is shutting down",
    }[error.status];
    const head = friendly || `HTTP ${error.status}`;
    return detail ? `${head} (${error.status} ${detail})` : `${head} (${error.status})`;
  }

  function showBanner(text) {
    ui.banner.textContent = text;
    ui.banner.hidden = !text;
  }

  function showTokenForm() {
    ui.tokenForm.hidden = false;
    ui.token.value = token();
    ui.token.focus();
  }

  // --------------------------------------------------------------- transcript

  function clearTranscript() {
    state.messages.clear();
    state.toolCalls.clear();
    ui.transcript.replaceChildren(ui.empty);
    ui.empty.hidden = false;
    setInterrupts([], "message");
  }

  function nearBottom() {
    const t = ui.transcript;
    return t.scrollHeight - t.scrollTop - t.clientHeight < 80;
  }

  function append(node) {
    const stick = nearBottom();
    ui.empty.hidden = true;
    ui.transcript.append(node);
    if (stick) scrollDown();
  }

  function scrollDown() {
    ui.transcript.scrollTop = ui.transcript.scrollHeight;
  }

  function touched(fn) {
    const stick = nearBottom();
    fn();
    if (stick) scrollDown();
  }

  function upsertUser(id, text) {
    const existing = state.messages.get(id);
    if (existing) return existing;
    const body = el("div", { class: "bubble-text", "data-testid": "user-text", text });
    const node = el(
      "article",
      { class: "msg user", "data-message-id": id, "aria-label": "You" },
      el("div", { class: "who", text: "You" }),
      body,
    );
    const entry = { kind: "user", el: node, body };
    state.messages.set(id, entry);
    append(node);
    return entry;
  }

  function upsertAssistantText(id, text, streaming) {
    let entry = state.messages.get(id);
    if (!entry || entry.kind !== "assistant") {
      const body = el("div", { class: "bubble-text", "data-testid": "assistant-text" });
      const node = el(
        "article",
        { class: "msg assistant", "data-message-id": id, "aria-label": "Assistant" },
        el("div", { class: "who", text: "Assistant" }),
        body,
      );
      entry = { kind: "assistant", el: node, body };
      state.messages.set(id, entry);
      append(node);
    }
    if (text !== undefined && entry.body.textContent !== text) {
      touched(() => {
        entry.body.textContent = text;
      });
    }
    entry.el.classList.toggle("streaming", !!streaming);
    return entry;
  }

  function upsertReasoning(id, text, streaming) {
    let entry = state.messages.get(id);
    if (!entry || entry.kind !== "reasoning") {
      const body = el("div", { class: "reasoning-text" });
      const label = el("span", { class: "reasoning-label", text: "Reasoning" });
      const node = el(
        "details",
        { class: "reasoning", "data-testid": "reasoning", "data-message-id": id },
        el("summary", {}, label),
        body,
      );
      entry = { kind: "reasoning", el: node, body, label };
      state.messages.set(id, entry);
      append(node);
    }
    if (text !== undefined && entry.body.textContent !== text) {
      touched(() => {
        entry.body.textContent = text;
      });
    }
    if (streaming || entry.el.classList.contains("streaming")) entry.el.open = !!streaming;
    entry.el.classList.toggle("streaming", !!streaming);
    entry.label.textContent = streaming ? "Reasoning…" : "Reasoning";
    return entry;
  }

  function upsertToolCall(id, name, args) {
    let call = state.toolCalls.get(id);
    if (!call) {
      const nameEl = el("span", { class: "tool-name", "data-testid": "tool-name" });
      const argsEl = el("pre", { class: "tool-args", "data-testid": "tool-args" });
      const progressEl = el("div", { class: "tool-progress", "data-testid": "tool-progress", hidden: true });
      const resultEl = el("div", { class: "tool-result-slot" });
      const statusEl = el("span", { class: "tool-status", text: "calling…" });
      const card = el(
        "article",
        { class: "tool-call", "data-testid": "tool-call", "data-tool-call-id": id, "aria-label": "Tool call" },
        el("div", { class: "tool-head" }, el("span", { class: "tool-icon", "aria-hidden": "true", text: "⚙" }), nameEl, statusEl),
        argsEl,
        progressEl,
        resultEl,
      );
      call = { card, name: "", args: "", nameEl, argsEl, progressEl, resultEl, statusEl, hasResult: false };
      state.toolCalls.set(id, call);
      append(card);
    }
    if (name && call.name !== name) {
      call.name = name;
      call.nameEl.textContent = name;
    }
    if (args !== undefined && args !== null) {
      const raw = typeof args === "string" ? args : JSON.stringify(args);
      if (raw !== call.args) {
        call.args = raw;
        touched(() => {
          call.argsEl.textContent = prettyJson(raw);
        });
      }
    }
    return call;
  }

  function appendToolArgs(id, delta) {
    const call = upsertToolCall(id);
    call.args += delta;
    touched(() => {
      call.argsEl.textContent = call.args;
    });
  }

  function finishToolArgs(id) {
    const call = upsertToolCall(id);
    call.argsEl.textContent = prettyJson(call.args);
  }

  // The content of a tool-progress activity ({toolCallId, text}), whether it comes as a
  // message of a snapshot or as an event; null for any other activity.
  function toolProgress(activity) {
    const content = activity.content;
    return activity.activityType === "tool_progress" && content && content.toolCallId ? content : null;
  }

  function setToolProgress(id, text) {
    const call = upsertToolCall(id);
    touched(() => {
      call.progressEl.hidden = !text;
      call.progressEl.textContent = text || "";
    });
    if (!call.hasResult) call.statusEl.textContent = "running…";
  }

  function setToolResult(id, content, isError) {
    const call = upsertToolCall(id);
    const text = asText(content);
    const error = !!isError || /^Error:/.test(text);
    touched(() => {
      call.resultEl.replaceChildren(
        el(
          "div",
          { class: `tool-result${error ? " failed" : ""}`, "data-testid": "tool-result" },
          el("div", { class: "tool-result-label", text: error ? "Error" : "Result" }),
          el("pre", { class: "tool-result-text", text }),
        ),
      );
      call.progressEl.hidden = true;
    });
    call.hasResult = true;
    call.statusEl.textContent = error ? "failed" : "done";
    call.card.classList.toggle("failed", error);
    call.card.classList.add("done");
  }

  function note(kind, text, testid) {
    append(el("div", { class: `note ${kind}`, "data-testid": testid || kind, role: kind === "error" ? "alert" : undefined, text }));
  }

  // Renders one AG-UI message (history, or a MESSAGES_SNAPSHOT): updates what is already on
  // screen by id and adds only what is new.
  function renderMessage(msg) {
    if (!msg || !msg.role) return;
    const id = msg.id || uuid();
    switch (msg.role) {
      case "user":
        upsertUser(id, asText(msg.content));
        break;
      case "assistant": {
        const text = asText(msg.content);
        if (text || (state.messages.get(id) && state.messages.get(id).kind === "assistant")) {
          upsertAssistantText(id, text, false);
        }
        for (const tc of msg.toolCalls || []) {
          const fn = tc.function || {};
          const call = upsertToolCall(tc.id, fn.name, fn.arguments);
          if (!call.hasResult) call.statusEl.textContent = "waiting";
        }
        break;
      }
      case "reasoning":
        upsertReasoning(id, asText(msg.content), false);
        break;
      case "tool":
        setToolResult(msg.toolCallId, msg.content, !!msg.error);
        break;
      case "activity": {
        const progress = toolProgress(msg);
        const call = progress && state.toolCalls.get(progress.toolCallId);
        if (progress && (!call || !call.hasResult)) setToolProgress(progress.toolCallId, progress.text);
        break;
      }
      default:
        break; // system / developer messages are not shown
    }
  }

  // ------------------------------------------------------------------ events

  // Per-run streaming state (ids of the message being streamed, for events without one).
  let current = { text: "", reasoning: "" };

  function handleEvent(ev, run) {
    switch (ev.type) {
      case "RUN_STARTED":
        setStatus("Running…");
        break;
      case "TEXT_MESSAGE_START":
        current.text = ev.messageId;
        upsertAssistantText(ev.messageId, "", true);
        break;
      case "TEXT_MESSAGE_CONTENT":
      case "TEXT_MESSAGE_CHUNK": {
        const id = ev.messageId || current.text || uuid();
        current.text = id;
        const entry = upsertAssistantText(id, undefined, true);
        if (ev.delta) {
          touched(() => {
            entry.body.append(ev.delta);
            entry.body.normalize();
          });
        }
        break;
      }
      case "TEXT_MESSAGE_END": {
        const entry = state.messages.get(ev.messageId || current.text);
        if (entry) entry.el.classList.remove("streaming");
        break;
      }
      case "REASONING_START":
      case "THINKING_START":
        break;
      case "REASONING_MESSAGE_START":
      case "THINKING_TEXT_MESSAGE_START": {
        const id = ev.messageId || uuid();
        current.reasoning = id;
        upsertReasoning(id, "", true);
        break;
      }
      case "REASONING_MESSAGE_CONTENT":
      case "REASONING_MESSAGE_CHUNK":
      case "THINKING_TEXT_MESSAGE_CONTENT": {
        const id = ev.messageId || current.reasoning || uuid();
        current.reasoning = id;
        const entry = state.messages.get(id) && state.messages.get(id).kind === "reasoning"
          ? state.messages.get(id)
          : upsertReasoning(id, "", true);
        if (ev.delta) {
          touched(() => {
            entry.body.append(ev.delta);
            entry.body.normalize();
          });
        }
        break;
      }
      case "REASONING_MESSAGE_END":
      case "THINKING_TEXT_MESSAGE_END": {
        const entry = state.messages.get(ev.messageId || current.reasoning);
        if (entry && entry.kind === "reasoning") upsertReasoning(entry.el.dataset.messageId, undefined, false);
        break;
      }
      case "REASONING_END":
      case "THINKING_END":
        break;
      case "TOOL_CALL_START":
        upsertToolCall(ev.toolCallId, ev.toolCallName);
        break;
      case "TOOL_CALL_ARGS":
        appendToolArgs(ev.toolCallId, ev.delta || "");
        break;
      case "TOOL_CALL_CHUNK":
        if (ev.toolCallName) upsertToolCall(ev.toolCallId, ev.toolCallName);
        if (ev.delta) appendToolArgs(ev.toolCallId, ev.delta);
        break;
      case "TOOL_CALL_END":
        finishToolArgs(ev.toolCallId);
        break;
      case "TOOL_CALL_RESULT":
        setToolResult(ev.toolCallId, ev.content, !!ev.error);
        break;
      case "ACTIVITY_SNAPSHOT": {
        const progress = toolProgress(ev);
        if (progress) setToolProgress(progress.toolCallId, progress.text);
        break;
      }
      case "STEP_STARTED":
        setStatus(`Running: ${ev.stepName || "step"}…`);
        break;
      case "STEP_FINISHED":
        break;
      case "CUSTOM":
        handleCustom(ev);
        break;
      case "MESSAGES_SNAPSHOT":
        for (const msg of ev.messages || []) renderMessage(msg);
        break;
      case "RUN_FINISHED": {
        run.finished = true;
        const outcome = ev.outcome || {};
        if (outcome.type === "interrupt") {
          setInterrupts(outcome.interrupts || []);
          setStatus(waitingText());
        } else if (outcome.type === "cancelled") {
          note("hint", "The run was cancelled (the server interrupted it).", "cancelled");
          setStatus("");
        } else {
          setStatus("");
        }
        break;
      }
      case "RUN_ERROR":
        run.finished = true;
        note("error", `Run failed: ${ev.message || "unknown error"}${ev.code ? ` (${ev.code})` : ""}`);
        setStatus("");
        break;
      default:
        break; // STATE_SNAPSHOT, STATE_DELTA, RAW, ...: nothing to show
    }
  }

  function handleCustom(ev) {
    const value = ev.value || {};
    if (ev.name === "timeline") {
      append(timelineView(value));
    } else if (ev.name === "hint") {
      note("hint", `Hint: ${value.text || ""}`);
    } else if (ev.name === "summary") {
      const entry = value.messageId
        ? upsertAssistantText(value.messageId, value.text, false)
        : upsertAssistantText(uuid(), value.text, false);
      entry.el.classList.add("summary");
      if (!entry.el.querySelector(".badge")) {
        entry.el.querySelector(".who").append(el("span", { class: "badge", text: "summary" }));
      }
    }
  }

  // ----------------------------------------------------------------- timeline

  function formatMs(ms) {
    const value = Number(ms) || 0;
    return value < 1000 ? `${value.toFixed(1)} ms` : `${(value / 1000).toFixed(2)} s`;
  }

  // What a mark (a decision, named as the trace's span events) says.
  function markText(mark) {
    const tool = mark.tool || "a tool call";
    switch (mark.kind) {
      case "approval.asked": return `approval asked: ${tool}`;
      case "approval.approved": return `approved: ${tool}`;
      case "approval.edited": return `edited: ${tool}`;
      case "approval.rejected": return `rejected: ${tool}`;
      case "tool.skipped": return `${tool} skipped by ${mark.hook || "a hook"}`;
      case "goto_reasoning": return `goto_reasoning by ${mark.hook || "a hook"}`;
      case "context.compacted":
        return `context compacted by ${mark.hook || "a hook"}: ${mark.tokensBefore} → ${mark.tokensAfter} tokens`;
      case "stop_agent":
        return `stop_agent by ${mark.hook || "a hook"}${mark.step ? ` (after ${mark.step})` : ""}`;
      default: return String(mark.kind || "decision");
    }
  }

  // A run's timeline (the CUSTOM "timeline" event that ends it): its model and tool steps as
  // bars on a time axis with their durations and tokens, and what hooks decided as marks.
  // Folded until opened.
  function timelineView(timeline) {
    const bars = Array.isArray(timeline.bars) ? timeline.bars : [];
    const marks = Array.isArray(timeline.marks) ? timeline.marks : [];
    const total = Math.max(
      Number(timeline.durationMs) || 0,
      ...bars.map((bar) => Number(bar.endMs) || 0),
      ...marks.map((mark) => Number(mark.atMs) || 0),
      0.1,
    );
    const percent = (ms) => `${Math.min(100, Math.max(0, ((Number(ms) || 0) / total) * 100)).toFixed(2)}%`;
    const track = (...children) => el("span", { class: "tl-track" }, ...children);
    const rows = bars.map((bar) => {
      const start = Number(bar.startMs) || 0;
      const end = Math.max(start, Number(bar.endMs) || start);
      const duration = formatMs(end - start);
      const tokens = bar.inputTokens !== undefined || bar.outputTokens !== undefined
        ? `${bar.inputTokens ?? 0} in / ${bar.outputTokens ?? 0} out tokens`
        : "";
      const block = el("span", {
        class: "tl-bar",
        title: `${bar.label}: ${formatMs(start)} to ${formatMs(end)} (${duration})${tokens ? `, ${tokens}` : ""}`,
      });
      block.style.left = percent(start);
      block.style.width = `max(2px, ${percent(end - start)})`;
      return el(
        "div",
        { class: `tl-row tl-${bar.kind}`, role: "listitem", "data-testid": "timeline-bar", "data-kind": bar.kind },
        el("span", { class: "tl-label", "data-testid": "timeline-bar-label", text: bar.label }),
        track(block),
        el(
          "span",
          { class: "tl-meta" },
          el("span", { "data-testid": "timeline-bar-duration", text: duration }),
          tokens && el("span", { class: "tl-tokens", "data-testid": "timeline-bar-tokens", text: tokens }),
        ),
      );
    });
    let decisions = null;
    if (marks.length) {
      const ticks = marks.map((mark, i) => {
        const tick = el("span", { class: "tl-mark", title: `${formatMs(mark.atMs)}: ${markText(mark)}`, text: String(i + 1) });
        tick.style.left = percent(mark.atMs);
        return tick;
      });
      rows.push(
        el(
          "div",
          { class: "tl-row tl-marks", role: "listitem" },
          el("span", { class: "tl-label", text: "decisions" }),
          track(...ticks),
          el("span", { class: "tl-meta" }),
        ),
      );
      decisions = el(
        "ol",
        { class: "tl-mark-list", "aria-label": "Decisions" },
        ...marks.map((mark) =>
          el(
            "li",
            { "data-testid": "timeline-mark", "data-kind": mark.kind },
            el("span", { class: "tl-at", text: formatMs(mark.atMs) }),
            el("span", { "data-testid": "timeline-mark-text", text: markText(mark) }),
          ),
        ),
      );
    }
    const steps = `${bars.length} step${bars.length === 1 ? "" : "s"}`;
    const decided = marks.length ? `, ${marks.length} decision${marks.length === 1 ? "" : "s"}` : "";
    return el(
      "details",
      { class: "timeline", "data-testid": "timeline" },
      el("summary", { "data-testid": "timeline-toggle" }, "Timeline", el("span", { class: "tl-overview", text: ` · ${steps}${decided} · ${formatMs(total)}` })),
      el("div", { class: "tl-rows", role: "list", "aria-label": "Steps" }, ...rows),
      decisions,
    );
  }

  // Reads `data:` frames (separated by blank lines) from a text/event-stream body.
  async function readSse(body, onEvent) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    const flush = (frame) => {
      const data = [];
      for (const line of frame.split(/\r\n|\r|\n/)) {
        if (line.startsWith("data:")) data.push(line.slice(line.startsWith("data: ") ? 6 : 5));
      }
      if (!data.length) return;
      let event;
      try {
        event = JSON.parse(data.join("\n"));
      } catch (error) {
        console.warn("unreadable event", data, error);
        return;
      }
      onEvent(event);
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let match;
      while ((match = /\r\n\r\n|\n\n|\r\r/.exec(buffer))) {
        const frame = buffer.slice(0, match.index);
        buffer = buffer.slice(match.index + match[0].length);
        flush(frame);
      }
    }
    if (buffer.trim()) flush(buffer);
  }

  // --------------------------------------------------------------------- runs

  function setStatus(text) {
    ui.status.textContent = text;
  }

  function setRunning(running) {
    state.running = running;
    ui.message.disabled = running;
    ui.send.disabled = running || state.interrupts.length > 0 || !state.agent;
    ui.agent.disabled = running || ui.agent.options.length < 2;
    ui.newThread.disabled = running;
    ui.stop.hidden = !running;
    ui.transcript.setAttribute("aria-busy", running ? "true" : "false");
    document.body.dataset.running = running ? "true" : "false";
    for (const button of ui.interrupts.querySelectorAll("button")) button.disabled = running;
    updateComposerHint();
  }

  function updateComposerHint() {
    ui.message.placeholder = state.interrupts.length
      ? state.interrupts.some(inDoubt)
        ? "Answer the request above first."
        : "Answer the approval request above first."
      : "Message the agent (Enter to send, Shift+Enter for a new line)";
  }

  // Starts a run and streams its events. `onAccepted` runs once the server accepted it.
  async function startRun({ messages, resume, onAccepted }) {
    if (state.running || !state.agent) return false;
    showBanner("");
    const input = {
      threadId: state.threadId,
      runId: uuid(),
      messages,
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    };
    if (resume) input.resume = resume;
    const controller = new AbortController();
    state.controller = controller;
    current = { text: "", reasoning: "" };
    const run = { finished: false };
    setRunning(true);
    setStatus("Sending…");
    let accepted = false;
    let stopped = false;
    try {
      const response = await api(agentPath(state.agent), {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(input),
        signal: controller.signal,
      });
      accepted = true;
      if (onAccepted) onAccepted();
      await readSse(response.body, (event) => handleEvent(event, run));
      if (!run.finished) {
        note("error", "The connection closed before the run finished.");
        stopped = true;
      }
    } catch (error) {
      if (controller.signal.aborted) {
        note("hint", "Stopped.", "stopped");
        stopped = true;
      } else if (accepted) {
        note("error", `The stream broke: ${error && error.message ? error.message : error}`);
      } else {
        showBanner(describeError(error));
      }
    } finally {
      state.controller = null;
      settleStreamed();
      setRunning(false);
      if (!state.interrupts.length) setStatus("");
      if (!state.interrupts.length) ui.message.focus();
    }
    // A run cut short may have left a tool call in doubt, or work to continue: ask the
    // thread what it awaits now.
    if (stopped) await refreshPending();
    return accepted;
  }

  // After a run: nothing stays "streaming", and a message that never got text goes.
  function settleStreamed() {
    for (const [id, entry] of state.messages) {
      if (entry.kind === "reasoning" && entry.el.classList.contains("streaming")) upsertReasoning(id, undefined, false);
      entry.el.classList.remove("streaming");
      if (entry.kind === "assistant" && !entry.body.textContent) {
        entry.el.remove();
        state.messages.delete(id);
      }
    }
  }

  async function sendMessage() {
    const text = ui.message.value.trim();
    if (!text || state.running || state.interrupts.length) return;
    const id = uuid();
    const entry = upsertUser(id, text);
    entry.el.classList.add("pending");
    ui.message.value = "";
    const accepted = await startRun({
      messages: [{ id, role: "user", content: text }],
      onAccepted: () => {
        entry.el.classList.remove("pending");
        setInterrupts([], "message");
      },
    });
    if (!accepted) {
      // Not sent: take the bubble back and give the text back to edit or retry.
      entry.el.remove();
      state.messages.delete(id);
      if (!ui.message.value) ui.message.value = text;
      ui.empty.hidden = state.messages.size > 0 || state.toolCalls.size > 0;
    }
  }

  // --------------------------------------------------------------- interrupts

  const IN_DOUBT = "tool_in_doubt";

  function inDoubt(interrupt) {
    return interrupt.reason === IN_DOUBT;
  }

  // `awaits` (from the thread's history) says whether a run without a new message would
  // continue the thread when no interrupt is pending.
  function setInterrupts(list, awaits) {
    state.interrupts = list.filter((i) => i && i.id);
    if (awaits !== undefined) state.awaits = awaits;
    else if (state.interrupts.length) state.awaits = "resume";
    state.decisions.clear();
    for (const interrupt of state.interrupts) {
      const call = state.toolCalls.get(interrupt.toolCallId);
      if (call && !call.hasResult && inDoubt(interrupt)) call.statusEl.textContent = "in doubt";
    }
    renderInterrupts();
    ui.send.disabled = state.running || state.interrupts.length > 0 || !state.agent;
    updateComposerHint();
  }

  function waitingText() {
    return state.interrupts.some(inDoubt) ? "Waiting for your answer." : "Waiting for your approval.";
  }

  function interruptsTitle() {
    const n = state.interrupts.length;
    const doubts = state.interrupts.filter(inDoubt).length;
    const together = "(answer each; they are sent together)";
    if (doubts === 0) {
      return n > 1 ? `The agent asks for approval of ${n} tool calls ${together}` : "The agent asks for approval";
    }
    if (doubts === n) {
      return n > 1
        ? `${n} tool calls were cut short and may or may not have happened ${together}`
        : "A tool call was cut short: it may or may not have happened";
    }
    return `${n} tool calls need your answer ${together}`;
  }

  function renderInterrupts() {
    const box = ui.interrupts;
    box.replaceChildren();
    const resumable = !state.interrupts.length && state.awaits === "run";
    box.hidden = state.interrupts.length === 0 && !resumable;
    if (resumable) {
      box.append(continueCard());
      return;
    }
    if (!state.interrupts.length) return;
    box.append(el("h2", { class: "interrupts-title", text: interruptsTitle() }));
    for (const interrupt of state.interrupts) {
      box.append(inDoubt(interrupt) ? inDoubtCard(interrupt) : interruptCard(interrupt));
    }
  }

  // A thread with work that needs no answer (tool calls that have not run, an answer the
  // agent has not given): a run without a new message continues it.
  function continueCard() {
    return el(
      "article",
      { class: "interrupt", "data-testid": "continue-card" },
      el("p", {
        class: "interrupt-message",
        text: "This thread has unfinished work: tool calls that have not run yet, or an answer the agent has not given.",
      }),
      el(
        "div",
        { class: "interrupt-actions" },
        el("button", {
          type: "button",
          class: "approve",
          "data-testid": "continue",
          text: "Continue",
          onclick: async () => {
            const accepted = await startRun({ messages: [], onAccepted: () => setInterrupts([], "message") });
            if (!accepted) renderInterrupts();
          },
        }),
      ),
    );
  }

  function interruptCard(interrupt) {
    const call = state.toolCalls.get(interrupt.toolCallId) || { name: "", args: "" };
    const decided = state.decisions.get(interrupt.id);
    const card = el("article", {
      class: "interrupt",
      "data-testid": "interrupt",
      "data-interrupt-id": interrupt.id,
      "aria-label": `Approval request for ${call.name || "a tool call"}`,
    });
    card.append(
      el(
        "div",
        { class: "interrupt-head" },
        el("span", { class: "tool-name", "data-testid": "interrupt-tool", text: call.name || interrupt.toolCallId || "tool call" }),
        interrupt.reason ? el("span", { class: "badge", text: interrupt.reason.replace(/_/g, " ") }) : null,
      ),
    );
    // The server's question repeats the arguments: show it only when the call is unknown.
    if (interrupt.message && !call.name) card.append(el("p", { class: "interrupt-message", text: interrupt.message }));
    const argsEl = el("pre", { class: "tool-args", "data-testid": "interrupt-args", text: prettyJson(call.args) || "{}" });
    card.append(argsEl);

    if (decided) {
      card.append(decisionRow(interrupt, decided));
      return card;
    }

    const actions = el("div", { class: "interrupt-actions" });
    const panel = el("div", { class: "interrupt-panel" });
    const approve = el("button", {
      type: "button",
      class: "approve",
      "data-testid": "approve",
      text: "Approve",
      onclick: () => decide(interrupt, { interruptId: interrupt.id, status: "resolved", payload: { approved: true } }),
    });
    const edit = el("button", {
      type: "button",
      class: "secondary",
      "data-testid": "edit",
      text: "Edit",
      "aria-expanded": "false",
      onclick: () => openEdit(interrupt, call, panel, edit, argsEl),
    });
    const reject = el("button", {
      type: "button",
      class: "danger",
      "data-testid": "reject",
      text: "Reject",
      "aria-expanded": "false",
      onclick: () => openReject(interrupt, panel, reject, argsEl),
    });
    actions.append(approve, edit, reject);
    card.append(actions, panel);
    return card;
  }

  // A tool call in doubt: it was running when the agent stopped and its result was never
  // stored. The person checks, then marks it done (with what it did), retries it (with the
  // same idempotency key) or fails it.
  function inDoubtCard(interrupt) {
    const meta = interrupt.metadata || {};
    const call = state.toolCalls.get(interrupt.toolCallId) || { name: "", args: "" };
    const name = call.name || meta.toolName || interrupt.toolCallId || "tool call";
    const card = el("article", {
      class: "interrupt in-doubt",
      "data-testid": "interrupt",
      "data-reason": IN_DOUBT,
      "data-interrupt-id": interrupt.id,
      "aria-label": `Tool call in doubt: ${name}`,
    });
    card.append(
      el(
        "div",
        { class: "interrupt-head" },
        el("span", { class: "tool-name", "data-testid": "interrupt-tool", text: name }),
        el("span", { class: "badge warn", text: "in doubt" }),
      ),
    );
    const args = call.args || (meta.arguments === undefined ? "" : JSON.stringify(meta.arguments));
    card.append(
      el("pre", { class: "tool-args", "data-testid": "interrupt-args", text: prettyJson(args) || "{}" }),
      el("p", {
        class: "interrupt-message",
        "data-testid": "in-doubt-message",
        text: "This call was running when the agent stopped, and its result was never stored: it may or may not have happened. Check, then tell the agent.",
      }),
    );
    if (meta.idempotencyKey) {
      card.append(
        el(
          "p",
          { class: "interrupt-message" },
          "Idempotency key: ",
          el("code", { "data-testid": "idempotency-key", text: meta.idempotencyKey }),
        ),
      );
    }
    const decided = state.decisions.get(interrupt.id);
    if (decided) {
      card.append(decisionRow(interrupt, decided));
      return card;
    }
    const actions = el("div", { class: "interrupt-actions" });
    const panel = el("div", { class: "interrupt-panel" });
    const done = el("button", {
      type: "button",
      class: "approve",
      "data-testid": "mark-done",
      text: "Mark done",
      "aria-expanded": "false",
      onclick: () =>
        openAnswer(panel, done, {
          id: `done-${interrupt.id}`,
          label: "What did the call do? (the agent reads it as the call's result)",
          testid: "done-result",
          multiline: true,
          required: true,
          confirm: { text: "Mark done", class: "approve", testid: "done-confirm" },
          payload: (text) => ({ action: "done", result: text }),
          interrupt,
        }),
    });
    const retry = el("button", {
      type: "button",
      class: "secondary",
      "data-testid": "retry",
      text: "Retry",
      onclick: () => decide(interrupt, { interruptId: interrupt.id, status: "resolved", payload: { action: "retry" } }),
    });
    const fail = el("button", {
      type: "button",
      class: "danger",
      "data-testid": "fail",
      text: "Fail",
      "aria-expanded": "false",
      onclick: () =>
        openAnswer(panel, fail, {
          id: `fail-${interrupt.id}`,
          label: "Why did it fail? (optional, the agent reads it)",
          testid: "fail-reason",
          multiline: false,
          required: false,
          confirm: { text: "Fail", class: "danger", testid: "fail-confirm" },
          payload: (text) => (text ? { action: "fail", reason: text } : { action: "fail" }),
          interrupt,
        }),
    });
    actions.append(done, retry, fail);
    card.append(actions, panel);
    return card;
  }

  // The text field of an in-doubt answer (Mark done's result, Fail's reason) and its
  // confirm button.
  function openAnswer(panel, button, spec) {
    collapseOthers(panel);
    button.setAttribute("aria-expanded", "true");
    const field = el(spec.multiline ? "textarea" : "input", {
      id: spec.id,
      class: spec.multiline ? "edit-args" : "reason",
      "data-testid": spec.testid,
      rows: spec.multiline ? 3 : undefined,
      type: spec.multiline ? undefined : "text",
    });
    const error = el("p", { class: "inline-error", role: "alert", hidden: true });
    const confirm = el("button", {
      type: "button",
      class: spec.confirm.class,
      "data-testid": spec.confirm.testid,
      text: spec.confirm.text,
      onclick: () => {
        const text = field.value.trim();
        if (spec.required && !text) {
          error.textContent = "Say what the call did: the agent reads it as its result.";
          error.hidden = false;
          field.setAttribute("aria-invalid", "true");
          field.focus();
          return;
        }
        decide(spec.interrupt, { interruptId: spec.interrupt.id, status: "resolved", payload: spec.payload(text) });
      },
    });
    if (!spec.multiline) {
      field.addEventListener("keydown", (e) => {
        if (e.key === "Enter") {
          e.preventDefault();
          confirm.click();
        }
      });
    }
    const cancel = el("button", {
      type: "button",
      class: "secondary",
      text: "Cancel",
      onclick: () => {
        panel.replaceChildren();
        button.setAttribute("aria-expanded", "false");
      },
    });
    panel.replaceChildren(
      el("label", { for: spec.id, text: spec.label }),
      field,
      error,
      el("div", { class: "interrupt-actions" }, confirm, cancel),
    );
    field.focus();
  }

  function decisionRow(interrupt, decided) {
    return el(
      "div",
      { class: "decision" },
      el("span", { "data-testid": "decision", text: describeDecision(decided) }),
      el("button", {
        type: "button",
        class: "link",
        text: "Change",
        onclick: () => {
          state.decisions.delete(interrupt.id);
          renderInterrupts();
        },
      }),
    );
  }

  function describeDecision(d) {
    const p = d.payload || {};
    if (p.action === "done") return `Marked done: ${p.result}`;
    if (p.action === "retry") return "Retry";
    if (p.action === "fail") return p.reason ? `Failed: ${p.reason}` : "Failed";
    if (p.approved && p.arguments !== undefined) return "Approved with edited arguments";
    if (p.approved) return "Approved";
    return p.reason ? `Rejected: ${p.reason}` : "Rejected";
  }

  function collapseOthers(panel) {
    for (const b of panel.parentElement.querySelectorAll("[aria-expanded]")) b.setAttribute("aria-expanded", "false");
  }

  // Closes an approval's edit or reject panel; the call's arguments show again (editing hid
  // them).
  function cancelButton(panel, button, argsEl) {
    return el("button", {
      type: "button",
      class: "secondary",
      text: "Cancel",
      onclick: () => {
        panel.replaceChildren();
        argsEl.hidden = false;
        button.setAttribute("aria-expanded", "false");
      },
    });
  }

  function openEdit(interrupt, call, panel, button, argsEl) {
    collapseOthers(panel);
    button.setAttribute("aria-expanded", "true");
    argsEl.hidden = true; // the textarea shows them, editable
    const textareaId = `edit-${interrupt.id}`;
    const textarea = el("textarea", {
      id: textareaId,
      class: "edit-args",
      "data-testid": "edit-args",
      rows: 6,
      spellcheck: "false",
    });
    textarea.value = prettyJson(call.args) || "{}";
    const error = el("p", { class: "inline-error", "data-testid": "edit-error", role: "alert", hidden: true });
    const confirm = el("button", {
      type: "button",
      class: "approve",
      "data-testid": "edit-confirm",
      text: "Approve with these arguments",
      onclick: () => {
        let args;
        try {
          args = JSON.parse(textarea.value);
        } catch (e) {
          error.textContent = `Not valid JSON: ${e.message}`;
          error.hidden = false;
          textarea.setAttribute("aria-invalid", "true");
          textarea.focus();
          return;
        }
        if (args === null || typeof args !== "object" || Array.isArray(args)) {
          error.textContent = "The arguments must be a JSON object ({…}).";
          error.hidden = false;
          textarea.setAttribute("aria-invalid", "true");
          textarea.focus();
          return;
        }
        decide(interrupt, { interruptId: interrupt.id, status: "resolved", payload: { approved: true, arguments: args } });
      },
    });
    const cancel = cancelButton(panel, button, argsEl);
    panel.replaceChildren(
      el("label", { for: textareaId, text: "Arguments (JSON)" }),
      textarea,
      error,
      el("div", { class: "interrupt-actions" }, confirm, cancel),
    );
    textarea.focus();
  }

  function openReject(interrupt, panel, button, argsEl) {
    collapseOthers(panel);
    button.setAttribute("aria-expanded", "true");
    argsEl.hidden = false;
    const inputId = `reason-${interrupt.id}`;
    const input = el("input", {
      id: inputId,
      type: "text",
      class: "reason",
      "data-testid": "reject-reason",
      placeholder: "Why not? (optional, the agent reads it)",
    });
    const confirm = el("button", {
      type: "button",
      class: "danger",
      "data-testid": "reject-confirm",
      text: "Reject",
      onclick: () => {
        const reason = input.value.trim();
        const payload = { approved: false };
        if (reason) payload.reason = reason;
        decide(interrupt, { interruptId: interrupt.id, status: "resolved", payload });
      },
    });
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        confirm.click();
      }
    });
    const cancel = cancelButton(panel, button, argsEl);
    panel.replaceChildren(
      el("label", { for: inputId, text: "Reason for rejecting (optional)" }),
      input,
      el("div", { class: "interrupt-actions" }, confirm, cancel),
    );
    input.focus();
  }

  async function decide(interrupt, resume) {
    if (state.running) return;
    state.decisions.set(interrupt.id, resume);
    const open = state.interrupts.filter((i) => !state.decisions.has(i.id));
    if (open.length) {
      renderInterrupts();
      setStatus(`${state.interrupts.length - open.length} of ${state.interrupts.length} decided; answer the rest to continue.`);
      return;
    }
    // Every interrupt answered: send them all in one run.
    const list = state.interrupts.map((i) => state.decisions.get(i.id));
    renderInterrupts();
    const accepted = await startRun({
      messages: [],
      resume: list,
      onAccepted: () => setInterrupts([]),
    });
    if (!accepted) {
      // Nothing was sent: let the user decide again.
      state.decisions.clear();
      renderInterrupts();
    }
  }

  // ------------------------------------------------------------ loading state

  async function loadAgents() {
    const response = await api("agents");
    const data = await response.json();
    const agents = Array.isArray(data.agents) ? data.agents : [];
    const wanted = readHash().agent || safeGet(AGENT_KEY);
    ui.agent.replaceChildren(...agents.map((name) => el("option", { value: name, text: name })));
    if (!agents.length) {
      ui.agent.append(el("option", { value: "", text: "No agents" }));
      state.agent = "";
      showBanner("The server has no agents.");
      return;
    }
    state.agent = agents.includes(wanted) ? wanted : agents[0];
    ui.agent.value = state.agent;
  }

  async function loadThread() {
    const ticket = Symbol("load");
    state.loadTicket = ticket;
    clearTranscript();
    const response = await api(agentPath(state.agent, "threads", state.threadId));
    const data = await response.json();
    if (state.loadTicket !== ticket) return; // a newer load started
    for (const msg of data.messages || []) renderMessage(msg);
    setInterrupts(data.interrupts || [], data.awaits || "message");
    if (state.interrupts.length) setStatus(waitingText());
    scrollDown();
  }

  // What the thread awaits now (after a run that was cut short), without redrawing the
  // conversation. Until the server has noticed that the run is gone, the thread is "busy"
  // (its tool calls still count as running): ask again a few times.
  async function refreshPending() {
    try {
      for (let attempt = 0; attempt < 10; attempt += 1) {
        const response = await api(agentPath(state.agent, "threads", state.threadId));
        const data = await response.json();
        if (state.running) return;
        if (data.awaits !== "busy" || attempt === 9) {
          setInterrupts(data.interrupts || [], data.awaits || "message");
          if (state.interrupts.length) setStatus(waitingText());
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    } catch (error) {
      showBanner(describeError(error));
    }
  }

  function safeGet(key) {
    try {
      return localStorage.getItem(key) || "";
    } catch {
      return "";
    }
  }

  function safeSet(key, value) {
    try {
      if (value) localStorage.setItem(key, value);
      else localStorage.removeItem(key);
    } catch {
      /* storage disabled: the value lasts for this page only */
    }
  }

  function useThreadFromHash() {
    const wanted = readHash().thread;
    state.threadId = wanted || uuid();
    ui.threadId.textContent = state.threadId;
    writeHash();
  }

  async function init() {
    showBanner("");
    setRunning(false);
    try {
      if (!state.threadId) useThreadFromHash();
      await loadAgents();
      writeHash(); // with the agent, when there is a choice
      setRunning(false);
      if (state.agent) await loadThread();
      ui.tokenForm.hidden = true;
    } catch (error) {
      showBanner(describeError(error));
    } finally {
      setRunning(false);
      document.body.dataset.ready = "true";
    }
  }

  // ------------------------------------------------------------------ wiring

  ui.composer.addEventListener("submit", (e) => {
    e.preventDefault();
    sendMessage();
  });

  ui.message.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      sendMessage();
    }
  });

  ui.stop.addEventListener("click", () => {
    if (state.controller) state.controller.abort();
  });

  ui.agent.addEventListener("change", async () => {
    state.agent = ui.agent.value;
    safeSet(AGENT_KEY, state.agent);
    writeHash();
    try {
      await loadThread();
    } catch (error) {
      showBanner(describeError(error));
    }
  });

  ui.newThread.addEventListener("click", () => {
    if (state.running) return;
    state.threadId = uuid();
    ui.threadId.textContent = state.threadId;
    writeHash();
    clearTranscript();
    showBanner("");
    setStatus("");
    setRunning(false);
    ui.message.focus();
  });

  window.addEventListener("hashchange", async () => {
    const { thread } = readHash();
    if (!thread || thread === state.threadId || state.running) return;
    state.threadId = thread;
    ui.threadId.textContent = thread;
    try {
      await loadThread();
    } catch (error) {
      showBanner(describeError(error));
    }
  });

  ui.tokenForm.addEventListener("submit", (e) => {
    e.preventDefault();
    safeSet(TOKEN_KEY, ui.token.value.trim());
    init();
  });

  init();
})();
