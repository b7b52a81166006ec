// Drives two AG-UI server processes behind one store with the official AG-UI client
// (@ag-ui/client's HttpAgent, as it ships: its schema parse and event verifier on), for
// tests/agui_instances.rs, and prints what it saw for the Rust test to check against the
// ledger and the store:
//
//     node tests/agui-client/instances.test.mjs DIR TRIALS URL0 URL1
//
// Each server's agent `assistant` calls `pay` (approval needed) on "Pay invoice N"; `pay`
// records its run in DIR/attempts, pays once per idempotency key (DIR/effects/<key>) and
// waits until DIR/release/N exists. Trial i pays invoice i+1 on thread agui-i: a run on
// instance A asks (interrupt), a run on A approves it, and while `pay` runs the same
// approving run is sent again to instance B (refused: 409 thread_busy). Then, by turn
// (i % 3):
//
// - complete:    `pay` is let finish; "Was it paid?" on B;
// - kill:        A is killed with SIGKILL mid-tool ("KILL a" on stdout, answered "KILLED a"
//                on stdin, then "URL a <url>" once a new process serves as A); a new client
//                on B runs without messages until it is not refused as busy (the dead
//                holder's lease lasts until it expires): the run lists the call in doubt
//                with its idempotency key; it is answered (done, or retry, by turn), then
//                "Was it paid?" on the new A;
// - kill-at-end: `pay` is let finish and A is killed 0 to 18 ms later (by turn), racing the
//                run's last saves; then as `kill`, answering only an interrupt.
//
// Ends with one line "REPORT <json>" on stdout; everything else goes to stderr.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

// stdout carries the protocol with the Rust test only.
const say = (line) => process.stdout.write(`${line}\n`);
for (const name of ["log", "info", "debug", "warn", "error"]) {
  console[name] = (...args) => process.stderr.write(`[console.${name}] ${args.map(String).join(" ")}\n`);
}

// When a killed server cuts a run's stream, the client's fetch reader rejects its cancel
// with "terminated", which the client re-throws outside any promise the caller holds (an
// unhandled rejection). Counted and reported: the Rust test checks there is one per kill at
// most, and nothing else.
const unhandled = [];
process.on("unhandledRejection", (reason) => {
  unhandled.push(`${reason?.name}: ${reason?.message}`);
  process.stderr.write(`[unhandled rejection] ${reason?.name}: ${reason?.message}\n`);
});

const [dir, trialsArg, ...urls] = process.argv.slice(2);
const KINDS = ["complete", "kill", "kill-at-end"];
const WAIT_MS = 60000;

// Lines from the Rust test.
const lines = [];
let waiting = null;
createInterface({ input: process.stdin }).on("line", (line) => {
  if (waiting) {
    const resolve = waiting;
    waiting = null;
    resolve(line.trim());
  } else {
    lines.push(line.trim());
  }
});
async function expectLine(prefix) {
  const line = lines.length > 0 ? lines.shift() : await new Promise((resolve) => (waiting = resolve));
  if (!line.startsWith(prefix)) throw new Error(`expected ${prefix} from the test, got ${line}`);
  return line.slice(prefix.length);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const clone = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

function agentOn(index, threadId, initialMessages = []) {
  return new HttpAgent({ url: `${urls[index]}/agents/assistant`, threadId, initialMessages: clone(initialMessages) });
}

// One run of `agent`: how it ended as the client saw it.
async function run(agent, params) {
  const seen = { resolved: false, status: null, code: null, error: null, types: [], outcome: null, interrupts: [], text: null };
  const subscriber = {
    onEvent({ event }) {
      seen.types.push(event.type);
    },
    onRunFinishedEvent(finished) {
      seen.outcome = finished.outcome;
      seen.interrupts = (finished.interrupts ?? []).map((i) => ({
        id: i.id,
        reason: i.reason,
        idempotencyKey: i.metadata?.idempotencyKey ?? null,
      }));
      seen.text = finished.result?.text ?? null;
    },
    onRunErrorEvent({ event }) {
      seen.error = `RUN_ERROR ${event.code}: ${event.message}`;
    },
  };
  let timer;
  const timeout = new Promise((resolve) => (timer = setTimeout(() => resolve("timeout"), WAIT_MS)));
  try {
    const outcome = await Promise.race([agent.runAgent(params, subscriber), timeout]);
    if (outcome === "timeout") {
      seen.error = "timed out";
      agent.abortRun();
    } else {
      seen.resolved = true;
    }
  } catch (error) {
    seen.status = error?.status ?? null;
    seen.code = error?.payload?.error?.code ?? null;
    seen.error = seen.error ?? `${error?.name}: ${error?.message}`;
  } finally {
    clearTimeout(timer);
  }
  return seen;
}

async function attempted(invoice) {
  const deadline = Date.now() + WAIT_MS;
  const attempts = join(dir, "attempts");
  while (Date.now() < deadline) {
    if (existsSync(attempts)) {
      const runs = readFileSync(attempts, "utf8").split("\n");
      if (runs.some((line) => line.split(" ")[0] === String(invoice))) return;
    }
    await sleep(10);
  }
  throw new Error(`pay never ran for invoice ${invoice}`);
}

const release = (invoice) => writeFileSync(join(dir, "release", String(invoice)), "");

async function trial(index) {
  const kind = KINDS[index % 3];
  const invoice = index + 1;
  const threadId = `agui-${index}`;
  const [a, b] = [index % 2, (index + 1) % 2];
  const report = { trial: index, kind, invoice, thread: threadId, instances: [a, b] };

  const asking = agentOn(a, threadId);
  asking.addMessage({ id: `t${index}-ask`, role: "user", content: `Pay invoice ${invoice}` });
  report.asked = await run(asking, { runId: `t${index}-ask` });
  const pending = asking.pendingInterrupts ?? [];
  const approved = { status: "resolved", payload: { approved: true } };
  const resume = buildResumeArray(pending, Object.fromEntries(pending.map((i) => [i.id, approved])));
  const messages = clone(asking.messages);
  const approving = run(asking, { runId: `t${index}-approve`, resume });
  await attempted(invoice);
  // The same run, sent again to the other instance while `pay` runs.
  report.resend = await run(agentOn(b, threadId, messages), { runId: `t${index}-approve`, resume });

  if (kind === "complete") {
    release(invoice);
    report.approve = await approving;
    report.again = await run(againOn(b, index, threadId), { runId: `t${index}-again` });
    return report;
  }
  if (kind === "kill-at-end") {
    release(invoice);
    await sleep(Math.floor(index / 3) * 2);
  }
  say(`KILL ${a}`);
  await expectLine(`KILLED ${a}`);
  report.approve = await approving;
  // A new client on B runs without messages until the thread is not busy.
  const reconnecting = agentOn(b, threadId);
  let busy = 0;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    report.next = await run(reconnecting, { runId: `t${index}-next` });
    if (report.next.code === "thread_busy" && Date.now() < deadline) {
      busy += 1;
      await sleep(50);
      continue;
    }
    break;
  }
  report.next.busy = busy;
  const interrupts = reconnecting.pendingInterrupts ?? [];
  if (interrupts.length > 0) {
    const retry = Math.floor(index / 3) % 2 === 1;
    if (retry) release(invoice);
    const answer = retry
      ? { status: "resolved", payload: { action: "retry" } }
      : { status: "resolved", payload: { action: "done", result: `paid invoice ${invoice} (ledger checked)` } };
    const answers = buildResumeArray(interrupts, Object.fromEntries(interrupts.map((i) => [i.id, answer])));
    report.answer = { action: answer.payload.action, ...(await run(reconnecting, { runId: `t${index}-answer`, resume: answers })) };
  }
  urls[a] = await expectLine(`URL ${a} `);
  report.again = await run(againOn(a, index, threadId), { runId: `t${index}-again` });
  return report;
}

function againOn(index, trialIndex, threadId) {
  const agent = agentOn(index, threadId);
  agent.addMessage({ id: `t${trialIndex}-again`, role: "user", content: "Was it paid?" });
  return agent;
}

const trials = [];
for (let index = 0; index < Number(trialsArg); index++) {
  const started = Date.now();
  trials.push(await trial(index));
  process.stderr.write(`trial ${index} ${KINDS[index % 3]}: ${((Date.now() - started) / 1000).toFixed(2)} s\n`);
}
say(`REPORT ${JSON.stringify({ trials, unhandled })}`);
process.exit(0);
