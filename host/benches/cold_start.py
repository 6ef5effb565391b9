"""Cold start of `toolhost serve --stdio`: spawn -> `initialize` answered, and spawn ->
every tool loaded, on an empty compile cache.

    python3 host/benches/cold_start.py TOOLHOST_BINARY PLUGINS_DIR [RUNS]

Each run gets a fresh, private XDG_CACHE_HOME (so every component compiles) and a copy
of nothing else: the plugins folder is used as it is (its lock, if any, is read only).
Per run it prints three times, in seconds since spawn:

- `init`: the `initialize` response arrived;
- `list`: the first `tools/list` (sent right after `initialize`) arrived, with how many
  tools it had;
- `loaded`: a `tools/call` of an unknown tool, sent right after, came back; the server
  answers it only once no load is pending (a host that loads before serving answers it
  at once, after `init`), so this is when every tool is in.

Then the medians. Used for the numbers in docs/benchmarks.md ("Start-up").
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(binary, plugins):
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        os.mkdir(cache, 0o700)
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        env.pop("RUST_LOG", None)
        env.pop("TOOLHOST_PLUGINS", None)
        t0 = time.monotonic()
        p = subprocess.Popen(
            [binary, "serve", "--stdio", "--plugins", plugins],
            cwd=tmp,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

        def send(msg):
            p.stdin.write((json.dumps(msg) + "\n").encode())
            p.stdin.flush()

        def wait(id_):
            while True:
                line = p.stdout.readline()
                if not line:
                    raise RuntimeError("server closed stdout")
                msg = json.loads(line)
                if msg.get("id") == id_:
                    return msg

        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cold-start", "version": "0"}}})
        wait(1)
        t_init = time.monotonic() - t0
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        tools = wait(2)["result"]["tools"]
        t_list = time.monotonic() - t0
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
              "params": {"name": "no_such_tool_xyz", "arguments": {}}})
        wait(3)
        t_loaded = time.monotonic() - t0
        p.stdin.close()
        p.kill()
        p.wait()
        return t_init, t_list, len(tools), t_loaded


def main():
    binary, plugins = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    rows = []
    for i in range(runs):
        t_init, t_list, n, t_loaded = run_once(binary, plugins)
        rows.append((t_init, t_list, t_loaded))
        print(f"run {i + 1}: init {t_init:.3f} s, list {t_list:.3f} s ({n} tools), loaded {t_loaded:.2f} s", flush=True)
    med = [statistics.median(c) for c in zip(*rows)]
    print(f"median: init {med[0]:.3f} s, list {med[1]:.3f} s, loaded {med[2]:.2f} s")


if __name__ == "__main__":
    main()
