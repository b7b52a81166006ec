"""Drives an A2A server with the official Python SDK (a2a-sdk) as a client, and prints
what it saw, one line per fact, for the Rust test to compare exactly.

    python client.py BASE_URL APPROVAL_URL

The server's agent at BASE_URL (see tests/a2a/python.rs) answers "Hello" in two chunks,
then "Again.", then takes 30 s over a third answer (which this client cancels), then
answers "Still here." in two chunks after half a second (while this client drops its
stream and subscribes again). The agent at APPROVAL_URL calls `delete` on /tmp/x, which
needs an approval, then answers "Deleted.".
"""

import asyncio
import json
import sys

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Value
from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    SubscribeToTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)


def state(value):
    return TaskState.Name(value)


def texts(parts):
    out = []
    for part in parts:
        if part.HasField("text"):
            out.append(part.text)
        elif part.HasField("data"):
            out.append("<data>")
    return "|".join(out)


def describe(event):
    kind = event.WhichOneof("payload")
    if kind == "task":
        return f"task {state(event.task.status.state)}"
    if kind == "status_update":
        update = event.status_update
        meta = update.metadata.fields.get("agentscope.kind")
        label = meta.string_value if meta is not None else "-"
        return f"status {state(update.status.state)} {label} {texts(update.status.message.parts)}".rstrip()
    if kind == "artifact_update":
        update = event.artifact_update
        return f"artifact {update.artifact.artifact_id} last={update.last_chunk} {texts(update.artifact.parts)}"
    return f"message {texts(event.message.parts)}"


def request(text, context, message_id):
    return SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id=message_id,
            context_id=context,
            parts=[Part(text=text)],
        )
    )


def data_parts(parts):
    """The data parts, each as compact JSON with sorted keys."""
    return [
        json.dumps(json_format.MessageToDict(part.data), sort_keys=True, separators=(",", ":"))
        for part in parts
        if part.HasField("data")
    ]


def line(message):
    role = {Role.ROLE_USER: "user", Role.ROLE_AGENT: "agent"}.get(message.role, "?")
    return f"{role}: {texts(message.parts)}"


async def main(url, approval_url):
    report = {}
    streaming = await create_client(url, ClientConfig(streaming=True))
    events = [event async for event in streaming.send_message(request("Hi", "py", "m1"))]
    report["stream"] = [describe(event) for event in events]
    task_id = events[0].task.id

    task = await streaming.get_task(GetTaskRequest(id=task_id))
    report["get"] = {
        "state": state(task.status.state),
        "history": [line(m) for m in task.history],
        "artifacts": [f"{a.artifact_id}: {texts(a.parts)}" for a in task.artifacts],
    }

    blocking = await create_client(url, ClientConfig(streaming=False))
    answers = [event async for event in blocking.send_message(request("Again?", "py", "m2"))]
    second = answers[0].task
    report["send"] = {
        "state": state(second.status.state),
        "history": [line(m) for m in second.history],
    }

    listed = await blocking.list_tasks(ListTasksRequest(context_id="py"))
    report["list"] = [t.id == task_id for t in listed.tasks]

    stream = streaming.send_message(request("Take your time", "py", "m3"))
    first = await stream.__anext__()
    canceled = await streaming.cancel_task(CancelTaskRequest(id=first.task.id))
    rest = [describe(event) async for event in stream]
    report["cancel"] = {"returned": state(canceled.status.state), "rest": rest}

    # The first connection of a running task is dropped; a second one follows the task live
    # to its end.
    stream = streaming.send_message(request("Keep going", "py", "m4"))
    first = await stream.__anext__()
    await stream.aclose()
    followed = [
        describe(event)
        async for event in streaming.subscribe(SubscribeToTaskRequest(id=first.task.id))
    ]
    again = await streaming.get_task(GetTaskRequest(id=first.task.id))
    report["resubscribe"] = {
        "dropped_after": describe(first),
        "followed": followed,
        "state": state(again.status.state),
        "history": [line(m) for m in again.history],
    }

    report["approval"] = await approval(approval_url)
    print(json.dumps(report, indent=1, sort_keys=True))


async def approval(url):
    """The task stops input-required with the pending calls as data; decisions on the same
    task resume it."""
    client = await create_client(url, ClientConfig(streaming=True))
    asked = [event async for event in client.send_message(request("Delete /tmp/x", "ok", "a1"))]
    task = asked[0].task
    question = asked[-1].status_update.status.message
    decisions = Value()
    json_format.ParseDict({"decisions": [{"toolCallId": "c1", "approved": True}]}, decisions)
    answer = SendMessageRequest(
        message=Message(
            role=Role.ROLE_USER,
            message_id="a2",
            context_id=task.context_id,
            task_id=task.id,
            parts=[Part(data=decisions)],
        )
    )
    resumed = [event async for event in client.send_message(answer)]
    done = await client.get_task(GetTaskRequest(id=task.id))
    return {
        "asked": [describe(event) for event in asked],
        "pending": data_parts(question.parts),
        "resumed": [describe(event) for event in resumed],
        "same_task": all(e.status_update.task_id == task.id for e in resumed[1:] if e.HasField("status_update")) and resumed[0].task.id == task.id,
        "state": state(done.status.state),
        "history": [line(m) for m in done.history],
    }


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
