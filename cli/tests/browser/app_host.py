"""An MCP App rendered in a real browser through `toolhost serve`: headless Chromium
(Debian) driven by selenium (PyPI), run by cli/tests/all/mcp_apps.rs.

Arguments: MCP_URL SCREENSHOT_DIR [TOOL BUTTON_ID RESULT_ID RESULT_PATTERN]: the tool whose
view is rendered, the view's button that calls it, the element that shows the result and
a regular expression the shown result must match (by default the ext-apps example's
`get-time`). Environment: TOOLHOST_CHROMIUM, TOOLHOST_CHROMEDRIVER.

As an App host does (SEP-1865): it asks `serve` for the tool, follows its
`_meta.ui.resourceUri` to the view, reads it with `resources/read`, and renders it in a
sandboxed iframe (scripts only: no same origin, so the view cannot reach the page). The
page answers the view's `ui/initialize`; the view's `tools/call` requests are passed to
`serve` over MCP by this script (the host's side of the bridge) and the results posted
back. The view's own button then shows what its tool returned (the time the wrapped
example server gives, or a plugin's greeting). Prints one line per step and OK at the end.
"""

import json
import os
import re
import sys
import tempfile
import time
import urllib.request

import chromium
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

mcp_url, shots = sys.argv[1:3]
tool_name, button_id, result_id, pattern = (sys.argv[3:7] if len(sys.argv) >= 7 else
                                           ("get-time", "get-time-btn", "server-time",
                                            r"\d{4}-\d\d-\d\dT"))
os.makedirs(shots, exist_ok=True)
session = None


def rpc(method, params, rid=1):
    """One request to `serve` in this script's MCP session (made on first use)."""
    global session
    if session is None and method != "initialize":
        rpc("initialize", {"protocolVersion": "2025-11-25",
                           "capabilities": {"extensions": {"io.modelcontextprotocol/ui":
                                                           {"mimeTypes": ["text/html;profile=mcp-app"]}}},
                           "clientInfo": {"name": "app-host-test", "version": "0"}})
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    text, sid = post(body)
    if sid:
        session = sid
    for line in text.splitlines():
        if line.startswith("data:"):
            text = line[5:]
    reply = json.loads(text)
    assert "result" in reply, reply
    return reply["result"]


def post(body):
    req = urllib.request.Request(mcp_url, data=json.dumps(body).encode(), method="POST")
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/json, text/event-stream")
    if session:
        req.add_header("Mcp-Session-Id", session)
    with urllib.request.urlopen(req, timeout=chromium.PATIENCE_S) as r:
        return r.read().decode(), r.headers.get("mcp-session-id")


print("step: the tool and its view, through serve", flush=True)
tools = rpc("tools/list", {}, 2)["tools"]
tool = next(t for t in tools if t["name"] == tool_name)
uri = tool["_meta"]["ui"]["resourceUri"]
contents = rpc("resources/read", {"uri": uri}, 3)["contents"][0]
assert contents["mimeType"] == "text/html;profile=mcp-app", contents["mimeType"]
view = contents["text"]

# The host page: the view in a scripts-only sandbox, a minimal App bridge.
page = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>App host</title></head>
<body><h1>toolhost App host</h1>
<iframe id="app" sandbox="allow-scripts" style="width:100%;height:600px;border:1px solid #888"></iframe>
<script>
const VIEW = __VIEW__;
window.__seen = []; window.__calls = [];
const frame = document.getElementById("app");
const send = (msg) => frame.contentWindow.postMessage(msg, "*");
window.__reply = (id, result) => send({jsonrpc: "2.0", id, result});
window.addEventListener("message", (e) => {
  if (e.source !== frame.contentWindow) return;
  const m = e.data || {};
  window.__seen.push(m.method || "(response)");
  if (m.method === "ui/initialize") {
    send({jsonrpc: "2.0", id: m.id, result: {
      protocolVersion: m.params.protocolVersion,
      hostInfo: {name: "toolhost-test-host", version: "0"},
      hostCapabilities: {serverTools: {}},
      hostContext: {theme: "light"}}});
  } else if (m.method === "tools/call") {
    window.__calls.push({id: m.id, params: m.params});
  } else if (m.id !== undefined && m.method) {
    send({jsonrpc: "2.0", id: m.id, result: {}});
  }
});
frame.srcdoc = VIEW;
</script></body></html>""".replace("__VIEW__", json.dumps(view).replace("</", "<\\/"))
host = os.path.join(tempfile.mkdtemp(), "host.html")
with open(host, "w") as f:
    f.write(page)

driver = chromium.start(1100, 900)
wait = WebDriverWait(driver, chromium.PATIENCE_S)
try:
    print("step: the view starts and says hello to its host", flush=True)
    driver.get("file://" + host)
    wait.until(lambda d: "ui/notifications/initialized" in d.execute_script("return window.__seen"))
    sandboxed = driver.execute_script("return document.getElementById('app').contentDocument === null")
    assert sandboxed, "the view shares the page's origin"
    driver.save_screenshot(os.path.join(shots, f"app-{tool_name}-started.png"))

    print("step: the view's button calls its tool through the bridge and serve", flush=True)
    driver.switch_to.frame(driver.find_element(By.ID, "app"))
    before = driver.find_element(By.ID, result_id).text
    driver.find_element(By.ID, button_id).click()
    driver.switch_to.default_content()
    answered = 0
    deadline = time.time() + chromium.PATIENCE_S
    while answered == 0:
        assert time.time() < deadline, "the view never called its tool"
        for call in driver.execute_script("return window.__calls.splice(0)"):
            assert call["params"]["name"] == tool_name, call
            result = rpc("tools/call", call["params"], 10 + answered)
            driver.execute_script("window.__reply(arguments[0], arguments[1])", call["id"], result)
            answered += 1
        time.sleep(0.05)
    driver.switch_to.frame(driver.find_element(By.ID, "app"))
    wait.until(lambda d: re.match(pattern, d.find_element(By.ID, result_id).text))
    shown = driver.find_element(By.ID, result_id).text
    assert shown != before, (before, shown)
    print(f"step: the view shows {shown}", flush=True)
    driver.switch_to.default_content()
    driver.save_screenshot(os.path.join(shots, f"app-{tool_name}-called.png"))
    print("OK", flush=True)
finally:
    driver.quit()
