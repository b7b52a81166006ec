// Real-browser test of the agentscope web chat, driven by tests/browser.rs.
//
//   node chat.test.mjs http://127.0.0.1:PORT/   (or the URL of a nested router: .../prefix)
//
// With the system Chromium (headless; CHROMIUM_PATH overrides /usr/bin/chromium):
//  1. loads the page, asks "What is 6*7?", waits for the streamed answer;
//  2. asks to delete the log files, waits for the approval request, clicks Approve, waits
//     for the tool result and the final answer;
//     Then opens the timeline of each of the three runs so far (click on "Timeline") and
//     reads its bars (kind, label, tokens; drawn in time order, each with a duration) and
//     the marks of the decisions (approval asked, stop_agent, approved);
//  3. reloads the page and checks the same conversation is shown again;
//  4. asks to pay an invoice, approves, and clicks Stop while `pay` runs; checks the card of
//     the call in doubt (Mark done / Retry / Fail), clicks Mark done, types the result and
//     waits for the agent's answer; reloads and checks nothing is asked any more.
// Prints one JSON line of what it saw and exits 0; on a failure writes a screenshot to a
// temp folder, prints its path and exits 1.

import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const TIMEOUT = 20_000;
const base = process.argv[2];
if (!base) {
  console.error("usage: node chat.test.mjs <server base URL>");
  process.exit(2);
}
// The page's URL as the server serves it: "http://host:port/" for a router at the root,
// "http://host:port/prefix" for one nested under /prefix.
const pageUrl = new URL(base);
const CHECKED_RESULT = "Paid invoice 7: receipt 42 (checked at the bank).";
const executablePath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

const problems = []; // page errors, failed or foreign requests
let stopping = false; // the Stop button was clicked: its aborted request is expected
let browser;
let page;

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// Everything the transcript shows, in order, read from the page's data-testid elements.
async function transcript() {
  return page.evaluate(() => {
    const items = [];
    for (const node of document.querySelectorAll("#transcript > *")) {
      const testid = node.dataset.testid;
      if (node.classList.contains("user")) {
        items.push({ user: node.querySelector('[data-testid="user-text"]').textContent });
      } else if (node.classList.contains("assistant")) {
        items.push({ assistant: node.querySelector('[data-testid="assistant-text"]').textContent });
      } else if (testid === "reasoning") {
        items.push({ reasoning: node.querySelector(".reasoning-text").textContent });
      } else if (testid === "tool-call") {
        const result = node.querySelector('[data-testid="tool-result"] pre');
        let args = node.querySelector('[data-testid="tool-args"]').textContent;
        try {
          args = JSON.parse(args);
        } catch {
          /* keep the text */
        }
        items.push({
          toolCall: node.querySelector('[data-testid="tool-name"]').textContent,
          arguments: args,
          result: result ? result.textContent : null,
        });
      } else if (testid === "error") {
        items.push({ error: node.textContent });
      }
    }
    return items;
  });
}

// The timelines of the runs shown, in order: opens each (as a person clicks "Timeline")
// and reads what it draws. Checks that each opened bar is visible, has a duration, and that
// the bars start in time order.
async function timelines() {
  const toggles = page.getByTestId("timeline-toggle");
  const count = await toggles.count();
  for (let i = 0; i < count; i += 1) {
    await toggles.nth(i).click();
    await page.getByTestId("timeline").nth(i).getByTestId("timeline-bar").first().waitFor({ state: "visible" });
  }
  return page.evaluate(() =>
    Array.from(document.querySelectorAll('[data-testid="timeline"]'), (node) => {
      const bars = Array.from(node.querySelectorAll('[data-testid="timeline-bar"]'));
      const lefts = bars.map((bar) => bar.querySelector(".tl-bar").getBoundingClientRect().left);
      return {
        open: node.open,
        bars: bars.map((bar) => {
          const tokens = bar.querySelector('[data-testid="timeline-bar-tokens"]');
          return {
            kind: bar.dataset.kind,
            label: bar.querySelector('[data-testid="timeline-bar-label"]').textContent,
            tokens: tokens ? tokens.textContent : null,
          };
        }),
        barsDrawn: bars.every((bar) => bar.querySelector(".tl-bar").getBoundingClientRect().width > 0),
        barsInTimeOrder: lefts.every((left, i) => i === 0 || left >= lefts[i - 1]),
        durations: bars.every((bar) =>
          /^\d+\.\d ms$|^\d+\.\d\d s$/.test(bar.querySelector('[data-testid="timeline-bar-duration"]').textContent),
        ),
        marks: Array.from(node.querySelectorAll('[data-testid="timeline-mark"]'), (mark) => ({
          kind: mark.dataset.kind,
          text: mark.querySelector('[data-testid="timeline-mark-text"]').textContent,
        })),
      };
    }),
  );
}

async function waitIdle() {
  await page.waitForSelector('body[data-running="false"]', { timeout: TIMEOUT });
}

async function send(text) {
  const input = page.getByTestId("message-input");
  await input.waitFor({ state: "visible", timeout: TIMEOUT });
  await page.waitForSelector('[data-testid="send"]:not([disabled])', { timeout: TIMEOUT });
  await input.fill(text);
  await page.getByTestId("send").click();
}

async function main() {
  check(
    existsSync(executablePath),
    `no Chromium at ${executablePath}: install it (Debian: apt-get install -y chromium) or set CHROMIUM_PATH`,
  );
  browser = await chromium.launch({ executablePath, headless: true, timeout: TIMEOUT });
  const context = await browser.newContext({ viewport: { width: 1000, height: 800 } });
  context.setDefaultTimeout(TIMEOUT);
  page = await context.newPage();
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console error: ${msg.text()}`);
  });
  page.on("request", (request) => {
    const url = new URL(request.url());
    if (url.protocol !== "data:" && url.origin !== pageUrl.origin) {
      problems.push(`request outside the server: ${request.url()}`);
    }
  });
  page.on("requestfailed", (request) => {
    const error = request.failure()?.errorText;
    // Stop aborts the run's request: that one is expected.
    if (stopping && request.method() === "POST" && error === "net::ERR_ABORTED") {
      stopping = false;
      return;
    }
    problems.push(`request failed: ${request.method()} ${request.url()} ${error}`);
  });
  // Counts the text nodes appended to assistant messages (one per streamed delta) and
  // records the tool progress texts shown (they are replaced by the result).
  await page.addInitScript(() => {
    window.__deltas = 0;
    window.__progress = [];
    new MutationObserver((records) => {
      for (const record of records) {
        const target = record.target;
        if (target.nodeType !== 1 || !target.dataset) continue;
        if (target.dataset.testid === "assistant-text") {
          for (const node of record.addedNodes) if (node.nodeType === 3) window.__deltas += 1;
        } else if (target.dataset.testid === "tool-progress" && target.textContent) {
          window.__progress.push(target.textContent);
        }
      }
    }).observe(document, { childList: true, subtree: true });
  });

  // --- 1. a streamed answer -------------------------------------------------------
  await page.goto(pageUrl.href);
  await page.waitForSelector('body[data-ready="true"]', { timeout: TIMEOUT });
  const threadId = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("thread");
  check(threadId, `no #thread=<id> in the URL: ${page.url()}`);
  const agent = await page.getByTestId("agent-select").inputValue();

  await send("What is 6*7?");
  await page.getByTestId("assistant-text").first().waitFor({ state: "visible" });
  await waitIdle();
  const answer = (await page.getByTestId("assistant-text").first().textContent()) ?? "";
  const answerDeltas = await page.evaluate(() => window.__deltas);
  check(answer.trim() !== "", "the answer is empty");

  // --- 2. an approval ---------------------------------------------------------------
  await send("Please delete the old log files.");
  const approve = page.getByTestId("approve");
  await approve.waitFor({ state: "visible" });
  await waitIdle();
  const interrupts = await page.getByTestId("interrupt").count();
  const approvalTool = (await page.getByTestId("interrupt-tool").first().textContent()) ?? "";
  const approvalArgs = JSON.parse((await page.getByTestId("interrupt-args").first().textContent()) ?? "null");
  const sendDisabledWhileAsking = await page.getByTestId("send").isDisabled();
  const resultsBefore = await page.getByTestId("tool-result").count();
  check(resultsBefore === 0, `a tool result before approval (${resultsBefore})`);

  await approve.click();
  await page.getByTestId("tool-result").first().waitFor({ state: "visible" });
  await waitIdle();
  check((await page.getByTestId("approve").count()) === 0, "the approval request is still shown after approving");
  const toolResult = (await page.locator('[data-testid="tool-result"] pre').first().textContent()) ?? "";
  const progress = await page.evaluate(() => window.__progress);
  const before = await transcript();
  check(!before.some((item) => item.error), `an error is shown: ${JSON.stringify(before)}`);
  const runTimelines = await timelines();

  // --- 3. reload: the same thread, the same conversation ------------------------------
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]', { timeout: TIMEOUT });
  const threadAfter = new URLSearchParams(new URL(page.url()).hash.slice(1)).get("thread");
  check(threadAfter === threadId, `the thread changed on reload: ${threadId} -> ${threadAfter}`);
  await page.getByTestId("tool-result").first().waitFor({ state: "visible" });
  const after = await transcript();
  check(
    same(before, after),
    `the history after the reload differs from what was shown:\nbefore: ${JSON.stringify(before)}\nafter:  ${JSON.stringify(after)}`,
  );
  const interruptsAfter = await page.getByTestId("interrupt").count();
  check(interruptsAfter === 0, `${interruptsAfter} approval requests shown after the reload`);
  check(problems.length === 0, `problems:\n${problems.join("\n")}`);

  // --- 4. a tool call stopped while it runs: in doubt; Mark done with the checked result --
  await send("Pay invoice 7.");
  await page.getByTestId("approve").waitFor({ state: "visible" });
  await waitIdle();
  await page.getByTestId("approve").click();
  const payProgress = page.locator('[data-tool-call-id="call-pay"] [data-testid="tool-progress"]');
  await payProgress.waitFor({ state: "visible" });
  const progressBeforeStop = (await payProgress.textContent()) ?? "";
  stopping = true;
  await page.getByTestId("stop").click();
  const markDone = page.getByTestId("mark-done");
  await markDone.waitFor({ state: "visible" });
  await waitIdle();
  const doubtCard = page.locator('[data-testid="interrupt"][data-reason="tool_in_doubt"]');
  const inDoubtInterrupts = await page.getByTestId("interrupt").count();
  const doubtTool = (await doubtCard.getByTestId("interrupt-tool").textContent()) ?? "";
  const doubtArgs = JSON.parse((await doubtCard.getByTestId("interrupt-args").textContent()) ?? "null");
  const doubtKey = (await doubtCard.getByTestId("idempotency-key").textContent()) ?? "";
  const buttons = await doubtCard.locator(".interrupt-actions > button").allTextContents();
  const sendDisabledInDoubt = await page.getByTestId("send").isDisabled();
  const doubtReason = await doubtCard.getAttribute("data-reason");

  await markDone.click();
  const result = page.getByTestId("done-result");
  await result.waitFor({ state: "visible" });
  await result.fill(CHECKED_RESULT);
  await page.getByTestId("done-confirm").click();
  await page.locator('[data-tool-call-id="call-pay"] [data-testid="tool-result"]').waitFor({ state: "visible" });
  await waitIdle();
  const doubtTranscript = await transcript();
  check(!doubtTranscript.some((item) => item.error), `an error is shown: ${JSON.stringify(doubtTranscript)}`);
  const payCall = doubtTranscript.find((item) => item.toolCall === "pay");
  const doubtTexts = doubtTranscript.filter((i) => i.assistant !== undefined).map((i) => i.assistant);
  const doubtInterruptsAfter = await page.getByTestId("interrupt").count();
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]', { timeout: TIMEOUT });
  await page.locator('[data-tool-call-id="call-pay"] [data-testid="tool-result"]').waitFor({ state: "visible" });
  const inDoubt = {
    progressBeforeStop,
    interrupts: inDoubtInterrupts,
    reason: doubtReason,
    tool: doubtTool,
    arguments: doubtArgs,
    idempotencyKey: doubtKey,
    buttons,
    sendDisabledWhileAsking: sendDisabledInDoubt,
    toolResult: payCall ? payCall.result : null,
    finalAnswer: doubtTexts[doubtTexts.length - 1] ?? "",
    interruptsAfter: doubtInterruptsAfter,
    interruptsAfterReload: await page.getByTestId("interrupt").count(),
  };
  check(problems.length === 0, `problems:\n${problems.join("\n")}`);

  const assistantTexts = before.filter((i) => i.assistant !== undefined).map((i) => i.assistant);
  const seen = {
    ok: true,
    threadId,
    agent,
    answer,
    answerDeltas,
    approval: { interrupts, tool: approvalTool, arguments: approvalArgs, sendDisabledWhileAsking },
    progress,
    toolResult,
    finalAnswer: assistantTexts[assistantTexts.length - 1] ?? "",
    transcript: before,
    timelines: runTimelines,
    reloadedTranscriptMatches: true,
    inDoubt,
  };
  console.log(JSON.stringify(seen));
}

try {
  await main();
  await browser.close();
  process.exit(0);
} catch (error) {
  console.error(`chat.test.mjs FAILED: ${error && error.stack ? error.stack : error}`);
  if (problems.length) console.error(`also seen:\n${problems.join("\n")}`);
  try {
    if (page) {
      const dir = mkdtempSync(join(tmpdir(), "agentscope-chat-"));
      const shot = join(dir, "failure.png");
      await page.screenshot({ path: shot, fullPage: true, timeout: 5_000 });
      writeFileSync(join(dir, "page.html"), await page.content());
      console.error(`screenshot: ${shot}`);
      console.error(`page html: ${join(dir, "page.html")}`);
    }
  } catch (shotError) {
    console.error(`(no screenshot: ${shotError.message})`);
  }
  if (browser) await browser.close().catch(() => {});
  process.exit(1);
}
