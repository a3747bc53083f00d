"""Play one episode of an environment served by `trainer serve-env`.

The client speaks OpenEnv's WebSocket protocol directly, with the
`websockets` package only (Debian: python3-websockets; pip: websockets):
a reset with a seed, steps with random actions from the vocabulary the
observation lists, the state at the end, then close.

    go run ./trainer serve-env -env sokoban &
    python3 docs/examples/openenv_client.py http://127.0.0.1:8000 5

The last line printed is a JSON summary: the actions taken, the return,
success and the step count.
"""

import asyncio
import json
import random
import sys

import websockets


async def play(base_url: str, seed: int) -> dict:
    ws_url = base_url.replace("http://", "ws://", 1).replace("https://", "wss://", 1).rstrip("/") + "/ws"
    async with websockets.connect(ws_url, max_size=4 << 20) as ws:

        async def call(message: dict) -> dict:
            await ws.send(json.dumps(message))
            reply = json.loads(await ws.recv())
            if reply["type"] == "error":
                raise RuntimeError(f"{reply['data']['code']}: {reply['data']['message']}")
            return reply["data"]

        result = await call({"type": "reset", "data": {"seed": seed}})
        obs = result["observation"]
        print(obs["instruction"])
        print(obs["text"])
        if not obs["actions"]:
            raise SystemExit("this environment takes free-form actions; this example picks from a vocabulary")
        rng = random.Random(seed)
        actions, total = [], 0.0
        while not result["done"]:
            action = rng.choice(obs["actions"])
            result = await call({"type": "step", "data": {"message": action}})
            obs = result["observation"]
            actions.append(action)
            total += result["reward"]
            print(f"> {action}: reward {result['reward']:+.2f}")
            print(obs["text"])
        state = await call({"type": "state"})
        await ws.send(json.dumps({"type": "close"}))
        return {"actions": actions, "return": total, "success": obs["success"], "steps": state["step_count"]}


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000"
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    print(json.dumps(asyncio.run(play(url, seed))))
