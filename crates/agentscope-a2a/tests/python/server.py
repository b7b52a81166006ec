"""An A2A 1.0 agent written with the official Python SDK (a2a-sdk), for the Rust client's
test (tests/a2a/python.rs): it echoes the user's text in two streamed pieces, then as an
artifact, numbering the turns of each context so that the client can tell a context goes on.

    python server.py PORT

It serves its card at http://127.0.0.1:PORT/.well-known/agent-card.json and JSON-RPC at
http://127.0.0.1:PORT/ until it is killed.
"""

import sys
from collections import Counter

import uvicorn
from starlette.applications import Starlette

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    TaskState,
)


class Echo(AgentExecutor):
    """Streams "Echo #N: " and the user's text as two working updates, then completes with
    the whole answer as an artifact."""

    def __init__(self):
        self.turns = Counter()

    async def execute(self, context, event_queue):
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        self.turns[task.context_id] += 1
        head = f"Echo #{self.turns[task.context_id]}: "
        text = context.get_user_input()
        for piece in (head, text):
            await updater.update_status(
                TaskState.TASK_STATE_WORKING,
                message=new_text_message(piece, context_id=task.context_id, task_id=task.id),
            )
        await updater.add_artifact([new_text_part(head + text)], name="echo", last_chunk=True)
        await updater.complete()

    async def cancel(self, context, event_queue):
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


def main():
    port = int(sys.argv[1])
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="python-echo",
        description="Echoes what it is told, in pieces.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(id="echo", name="echo", description="Echoes text.", tags=["echo"])
        ],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    )
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
