"""Drives an A2A server with the official Python SDK (a2a-sdk) as a client, and prints
what it saw, one line per fact, for the Rust test to compare exactly.

    python client.py BASE_URL

The server's agent (see tests/a2a/python.rs) answers "Hello" in two chunks, then
"Again.", then takes 30 s over a third answer (which this client cancels).
"""

import asyncio
import json
import sys

from a2a.client import ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
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


def line(message):
    role = {Role.ROLE_USER: "user", Role.ROLE_AGENT: "agent"}.get(message.role, "?")
    return f"{role}: {texts(message.parts)}"


async def main(url):
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

    print(json.dumps(report, indent=1, sort_keys=True))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
