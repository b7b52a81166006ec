// The agentscope web chat: talks AG-UI to the server it is served from.
//
// Routes (relative to the page, so the router may be mounted anywhere):
//   GET  agents                               -> {"agents": [...]}
//   GET  agents/{agent}/threads/{threadId}     -> {threadId, messages, interrupts}
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
    // Pending interrupts and the decisions taken on them (interruptId -> payload/status).
    interrupts: [],
    decisions: new Map(),
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
    const friendly = {
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
    setInterrupts([]);
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
          setStatus("Waiting for your approval.");
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
    if (ev.name === "hint") {
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
      ? "Answer the approval request above first."
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
      if (!run.finished) note("error", "The connection closed before the run finished.");
    } catch (error) {
      if (controller.signal.aborted) {
        note("hint", "Stopped.", "stopped");
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
      onAccepted: () => entry.el.classList.remove("pending"),
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

  function setInterrupts(list) {
    state.interrupts = list.filter((i) => i && i.id);
    state.decisions.clear();
    renderInterrupts();
    ui.send.disabled = state.running || state.interrupts.length > 0 || !state.agent;
    updateComposerHint();
  }

  function renderInterrupts() {
    const box = ui.interrupts;
    box.replaceChildren();
    box.hidden = state.interrupts.length === 0;
    if (!state.interrupts.length) return;
    const many = state.interrupts.length > 1;
    box.append(
      el("h2", {
        class: "interrupts-title",
        text: many
          ? `The agent asks for approval of ${state.interrupts.length} tool calls (answer each; they are sent together)`
          : "The agent asks for approval",
      }),
    );
    for (const interrupt of state.interrupts) box.append(interruptCard(interrupt));
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
      card.append(
        el(
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
        ),
      );
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

  function describeDecision(d) {
    const p = d.payload || {};
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
    setInterrupts(data.interrupts || []);
    if (state.interrupts.length) setStatus("Waiting for your approval.");
    scrollDown();
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
