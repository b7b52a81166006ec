"""Drives three A2A server processes behind one store with the official Python SDK (a2a-sdk)
as the client, for tests/a2a/processes.rs (and prints what it saw, for the Rust test to
check against the ledger and the store).

    python instances.py DIR TRIALS URL0 URL1 URL2

Each server's agent calls `pay` (approval needed) on "Pay invoice N"; `pay` records its run
in DIR/attempts, pays once per idempotency key (DIR/effects/<key>) and waits until
DIR/release/N exists. Trial i pays invoice i+1 in context trial-i: ask on instance A,
approve on A, and while `pay` runs, send the same approval again to B (it must follow the
task it started) and subscribe on C; then, by turn (i % 5):

- complete: let `pay` finish;
- cancel:   cancel the task from B;
- kill:     ask the Rust test to kill A with SIGKILL ("KILL a" on stdout, answered "KILLED a"
            on stdin, then "URL a <url>" once a new process serves as A); send "Was it
            paid?" to B until it is not refused as busy (the dead holder's lease expires
            meanwhile): it must ask about the call in doubt; answer "done" or "retry" (by
            turn) on B, then send "Was it paid?" again to the new A;
- kill-at-end: let `pay` finish and kill A a few milliseconds later (0 to 18, by turn),
            racing the call's last saves; then as `kill`, answering only if the next
            message asks;
- kill-twice: as `kill`, then retry the call on C and have C killed while `pay` runs again;
            the next message, to B, must ask about the call again; answer "done".

Ends with one line "REPORT <json>" on stdout; everything else goes to stderr.
"""

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import httpx
from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskState,
)

KINDS = ["complete", "cancel", "kill", "kill-at-end", "kill-twice"]
BUSY = "The context is busy"
WAIT = 60.0


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def state(value):
    return TaskState.Name(value)


def first_text(message):
    for part in message.parts:
        if part.HasField("text"):
            return part.text
    return None


def data_parts(message):
    return [json_format.MessageToDict(part.data) for part in message.parts if part.HasField("data")]


def text_message(text, context, message_id, task_id=None):
    message = Message(
        role=Role.ROLE_USER, message_id=message_id, context_id=context, parts=[Part(text=text)]
    )
    if task_id:
        message.task_id = task_id
    return message


def decisions_message(context, task_id, message_id, decisions):
    value = Value()
    json_format.ParseDict({"decisions": decisions}, value)
    return Message(
        role=Role.ROLE_USER,
        message_id=message_id,
        context_id=context,
        task_id=task_id,
        parts=[Part(data=value)],
    )


def event_task_id(event):
    kind = event.WhichOneof("payload")
    if kind == "task":
        return event.task.id
    if kind == "status_update":
        return event.status_update.task_id
    if kind == "artifact_update":
        return event.artifact_update.task_id
    return None


def describe(event):
    kind = event.WhichOneof("payload")
    if kind == "task":
        return f"task {state(event.task.status.state)}"
    if kind == "status_update":
        return f"status {state(event.status_update.status.state)}"
    if kind == "artifact_update":
        return "artifact"
    return "message"


class Stream:
    """Reads a stream of events in the background: the first event, the task ids seen, the
    last status, and the error that cut it, if any."""

    def __init__(self, events):
        self.events = []
        self.error = None
        self.started = asyncio.Event()
        self.reader = asyncio.create_task(self.read(events))

    async def read(self, events):
        try:
            async for event in events:
                self.events.append(event)
                self.started.set()
        except Exception as error:  # a stream cut by a kill, or refused
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self.started.set()

    async def first(self):
        await asyncio.wait_for(self.started.wait(), WAIT)

    async def end(self):
        await asyncio.wait_for(self.reader, WAIT)

    def report(self):
        last = {"state": None, "text": None, "error": self.error}
        for event in self.events:
            kind = event.WhichOneof("payload")
            status = None
            if kind == "task":
                status = event.task.status
            elif kind == "status_update":
                status = event.status_update.status
            if status is not None:
                last["state"] = state(status.state)
                last["text"] = first_text(status.message) if status.HasField("message") else None
        return {
            "first": describe(self.events[0]) if self.events else None,
            "ids": sorted({event_task_id(e) for e in self.events if event_task_id(e)}),
            "last": last,
            "events": [describe(e) for e in self.events],
        }


class Instances:
    def __init__(self, urls, http):
        self.urls = list(urls)
        self.http = http
        self.clients = {}

    async def client(self, index, streaming):
        key = (self.urls[index], streaming)
        if key not in self.clients:
            config = ClientConfig(streaming=streaming, httpx_client=self.http)
            self.clients[key] = await create_client(self.urls[index], config)
        return self.clients[key]

    async def send(self, index, message):
        """A blocking send: the task it answers with."""
        client = await self.client(index, False)
        answers = [a async for a in client.send_message(SendMessageRequest(message=message))]
        return answers[0].task

    async def stream(self, index, message):
        client = await self.client(index, True)
        return Stream(client.send_message(SendMessageRequest(message=message)))

    async def subscribe(self, index, task_id):
        client = await self.client(index, True)
        return Stream(client.subscribe(SubscribeToTaskRequest(id=task_id)))

    async def get(self, index, task_id):
        client = await self.client(index, False)
        return await client.get_task(GetTaskRequest(id=task_id))

    async def cancel(self, index, task_id):
        client = await self.client(index, False)
        return await client.cancel_task(CancelTaskRequest(id=task_id))


class Control:
    """The Rust test on stdin: "KILLED i", "URL i <url>" (in the order the kills were asked
    for; a line is taken by the first wait for its prefix)."""

    def __init__(self):
        self.lines = []
        self.arrived = asyncio.Condition()
        loop = asyncio.get_running_loop()

        async def arrive(line):
            async with self.arrived:
                self.lines.append(line)
                self.arrived.notify_all()

        def pump():
            for line in sys.stdin:
                asyncio.run_coroutine_threadsafe(arrive(line.strip()), loop)

        # A daemon thread: the client exits while it still waits for a line.
        threading.Thread(target=pump, daemon=True).start()

    async def expect(self, prefix):
        async def taken():
            async with self.arrived:
                while True:
                    for line in self.lines:
                        if line.startswith(prefix):
                            self.lines.remove(line)
                            return line[len(prefix):]
                    await self.arrived.wait()

        return await asyncio.wait_for(taken(), WAIT)


async def attempted(directory, invoice, runs=1):
    """Waits until `pay` has run `runs` times for `invoice` (its runs are in the ledger)."""
    deadline = time.monotonic() + WAIT
    attempts = directory / "attempts"
    while time.monotonic() < deadline:
        if attempts.exists():
            lines = attempts.read_text().splitlines()
            if sum(1 for line in lines if line.split(" ")[0] == str(invoice)) >= runs:
                return
        await asyncio.sleep(0.01)
    raise RuntimeError(f"pay never ran {runs} times for invoice {invoice}")


async def asked_after_kill(instances, index, context, message_id, report_key, report):
    """Sends "Was it paid?" to instance `index` until it is not refused as busy (a killed
    holder's lease lasts until it expires); records the task it got."""
    message = text_message("Was it paid?", context, message_id)
    busy = 0
    deadline = time.monotonic() + WAIT
    while True:
        task = await instances.send(index, message)
        text = first_text(task.status.message) or ""
        if (task.status.state == TaskState.TASK_STATE_REJECTED and text.startswith(BUSY)
                and time.monotonic() < deadline):
            busy += 1
            await asyncio.sleep(0.05)
            continue
        break
    report["messages"].append({"id": message.message_id, "task": task.id})
    in_doubt = [{"id": call["id"], "idempotencyKey": call["idempotencyKey"]}
                for data in data_parts(task.status.message)
                for call in data.get("inDoubtToolCalls", [])]
    report[report_key] = {"task": task.id, "state": state(task.status.state), "text": text,
                          "in_doubt": in_doubt, "busy": busy}
    return task


def outcome(task):
    return {"state": state(task.status.state), "text": first_text(task.status.message)}


async def trial(index, directory, instances, control):
    kind = KINDS[index % len(KINDS)]
    invoice = index + 1
    context = f"trial-{index}"
    a, b, c = index % 3, (index + 1) % 3, (index + 2) % 3
    report = {"trial": index, "kind": kind, "invoice": invoice, "context": context,
              "instances": [a, b, c], "messages": []}

    ask = text_message(f"Pay invoice {invoice}", context, f"t{index}-ask")
    asked = await instances.send(a, ask)
    report["task"] = asked.id
    report["messages"].append({"id": ask.message_id, "task": asked.id})
    pending = [call["id"] for data in data_parts(asked.status.message)
               for call in data.get("pendingToolCalls", [])]
    report["asked"] = {"state": state(asked.status.state), "pending": pending}

    approve = decisions_message(context, asked.id, f"t{index}-approve",
                                [{"toolCallId": f"pay-{invoice}", "approved": True}])
    report["messages"].append({"id": approve.message_id, "task": asked.id})
    original = await instances.stream(a, approve)
    await attempted(directory, invoice)
    # The same approval again, to another instance, while `pay` runs; a subscriber on the
    # third.
    resend = await instances.stream(b, approve)
    await resend.first()
    subscriber = await instances.subscribe(c, asked.id)
    await subscriber.first()

    if kind == "complete":
        (directory / "release" / str(invoice)).touch()
    elif kind == "cancel":
        canceled = await instances.cancel(b, asked.id)
        report["cancel"] = state(canceled.status.state)
    else:
        if kind == "kill-at-end":
            (directory / "release" / str(invoice)).touch()
            await asyncio.sleep((index // len(KINDS)) * 0.002)
        print(f"KILL {a}", flush=True)
        await control.expect(f"KILLED {a}")
        # The next message, to B, until it is not refused as busy (A's lease is held until it
        # expires): when the call was in doubt, it asks about it instead of reaching the agent.
        next_task = await asked_after_kill(instances, b, context, f"t{index}-next", "next", report)
        if next_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED and kind == "kill-twice":
            # Retried on C, which is killed while `pay` runs again: the next message, to B,
            # asks about the call again. (The task's streams end first: the subscriber is on C.)
            for stream in (original, resend, subscriber):
                await stream.end()
            retry = decisions_message(context, next_task.id, f"t{index}-retry",
                                      [{"toolCallId": f"pay-{invoice}", "action": "retry"}])
            report["messages"].append({"id": retry.message_id, "task": next_task.id})
            retrying = await instances.stream(c, retry)
            await attempted(directory, invoice, runs=2)
            print(f"KILL {c}", flush=True)
            await control.expect(f"KILLED {c}")
            await retrying.end()
            report["retrying"] = retrying.report()
            next_task = await asked_after_kill(instances, b, context, f"t{index}-next2", "next2",
                                               report)
            report["retried"] = outcome(await instances.get(b, report["next"]["task"]))
        if next_task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            # Answered on B: by turn, it was done, or retry it (after a second kill, done).
            retry = (index // len(KINDS)) % 2 == 1 and kind != "kill-twice"
            if retry:
                (directory / "release" / str(invoice)).touch()
                decision = {"toolCallId": f"pay-{invoice}", "action": "retry"}
            else:
                decision = {"toolCallId": f"pay-{invoice}", "action": "done",
                            "result": f"paid invoice {invoice} (ledger checked)"}
            answer = decisions_message(context, next_task.id, f"t{index}-answer", [decision])
            answered = await instances.send(b, answer)
            report["messages"].append({"id": answer.message_id, "task": next_task.id})
            report["answer"] = {"action": decision["action"], "reply": outcome(answered)}

    for stream in (original, resend, subscriber):
        await stream.end()
    report["original"] = original.report()
    report["resend"] = resend.report()
    report["subscribe"] = subscriber.report()
    if kind.startswith("kill"):
        instances.urls[a] = await control.expect(f"URL {a} ")
    if "retrying" in report:
        instances.urls[c] = await control.expect(f"URL {c} ")
    report["get"] = outcome(await instances.get(c, asked.id))
    if kind.startswith("kill"):
        again = text_message("Was it paid?", context, f"t{index}-again")
        task = await instances.send(a, again)
        report["messages"].append({"id": again.message_id, "task": task.id})
        report["again"] = {"task": task.id, **outcome(task)}
    return report


async def main(directory, trials, urls):
    directory = Path(directory)
    control = Control()
    async with httpx.AsyncClient(timeout=WAIT) as http:
        instances = Instances(urls, http)
        reports = []
        for index in range(trials):
            started = time.monotonic()
            report = await trial(index, directory, instances, control)
            log(f"trial {index} {report['kind']}: {time.monotonic() - started:.2f} s")
            reports.append(report)
    print("REPORT " + json.dumps({"trials": reports}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3:6]))
