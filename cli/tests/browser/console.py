"""The operator console in a real browser: headless Chromium (Debian) driven through
ChromeDriver by the selenium WebDriver client (PyPI). Run by cli/tests/all/console_browser.rs
against a real `toolhost serve --console`.

Arguments: ADMIN_URL TOKEN_FILE MCP_URL SCREENSHOT_DIR. Environment: TOOLHOST_CHROMIUM,
TOOLHOST_CHROMEDRIVER. Prints one line per step; exits non-zero with the reason on failure.

What it does, as an operator would: log in, see the sources, approve the held plugin and
watch its state change, make a call with a hostile argument and see it appear live, filter
the audit trail and open the record. On every page it checks that none of the hostile
component's markup ran (`window.__pwned` stays undefined, no injected element exists) and
that the markup is on the page as text. A screenshot of each page is written.
"""

import json
import os
import sys
import time
import urllib.request

import chromium
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

admin, token_file, mcp_url, shots = sys.argv[1:5]
token = open(token_file).read().strip()
os.makedirs(shots, exist_ok=True)

PATIENCE_S = chromium.PATIENCE_S
started = time.monotonic()
driver = chromium.start(1280, 1000)
wait = WebDriverWait(driver, PATIENCE_S)


current = "start"


def step(text):
    global current
    current = text
    print(f"step: {text} (at {time.monotonic() - started:.1f} s)", flush=True)


def inert(page):
    """No hostile markup ran or became an element on this page."""
    pwned = driver.execute_script("return window.__pwned === undefined ? null : String(window.__pwned)")
    assert pwned is None, f"{page}: hostile script ran ({pwned})"
    for css in ("#pwn-link", "svg[onload]", "img[onerror]", "body > style", "div[style]"):
        found = driver.find_elements(By.CSS_SELECTOR, css)
        assert not found, f"{page}: an injected element {css} exists"


def shot(name):
    path = os.path.join(shots, f"{name}.png")
    assert driver.save_screenshot(path), path
    # What the page weighed and when it first painted (docs/benchmarks.md, "Console").
    nav = driver.execute_script(
        "const n = performance.getEntriesByType('navigation')[0];"
        "const p = performance.getEntriesByName('first-contentful-paint')[0];"
        "return [n ? n.encodedBodySize : -1, n ? n.responseEnd - n.requestStart : -1, p ? p.startTime : -1]")
    print(f"metric: {name} html_bytes={nav[0]} response_ms={nav[1]:.1f} first_paint_ms={nav[2]:.1f}", flush=True)


def mcp_call(tool, arguments):
    """One tools/call over Streamable HTTP, as a client would make it."""
    def post(body, session=None):
        req = urllib.request.Request(mcp_url, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json, text/event-stream")
        if session:
            req.add_header("Mcp-Session-Id", session)
        with urllib.request.urlopen(req, timeout=PATIENCE_S) as r:
            return r.headers.get("mcp-session-id"), r.read().decode()
    session, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "browser-test", "version": "0"}}})
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    return post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": tool, "arguments": arguments}}, session)[1]


def plugin_state(name):
    section = driver.find_element(By.CSS_SELECTOR, f'section.source[data-name="{name}"]')
    return section.find_element(By.CSS_SELECTOR, "dd.state").text


try:
    step("login page")
    driver.get(f"{admin}/console/sources")
    assert "Log in" in driver.title, driver.title
    shot("login")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login").click()
    wait.until(lambda d: "Sources" in d.title)

    step("sources: the held plugin, the hostile one shown as text")
    assert plugin_state("calc").startswith("held"), plugin_state("calc")
    hostile = driver.find_element(By.CSS_SELECTOR, 'section.source[data-name="hostile_html"] td.description')
    assert "<script>window.__pwned='script'</script>" in hostile.text, hostile.text
    assert "javascript:window.__pwned='link'" in hostile.text
    inert("sources")
    shot("sources")
    driver.find_element(By.NAME, "q").send_keys("hostile")
    driver.find_element(By.CSS_SELECTOR, "form.filter button").click()
    wait.until(lambda d: "q=hostile" in d.current_url)
    names = [s.get_attribute("data-name") for s in driver.find_elements(By.CSS_SELECTOR, "section.source")]
    assert names == ["hostile_html"], names

    step("pending: approve calc")
    driver.get(f"{admin}/console/pending")
    section = driver.find_element(By.CSS_SELECTOR, 'section.pending[data-name="calc"]')
    assert "Changes since the approval" in section.text
    inert("pending")
    shot("pending")
    section.find_element(By.CSS_SELECTOR, "button.approve").click()
    wait.until(lambda d: "Approved" in d.title)
    shot("approved")
    deadline = time.time() + PATIENCE_S
    while True:
        driver.get(f"{admin}/console/sources?kind=plugin")
        if plugin_state("calc") == "approved":
            break
        assert time.time() < deadline, f"calc is still {plugin_state('calc')}"
        time.sleep(0.2)

    step("live: a call appears")
    driver.get(f"{admin}/console/live")
    inert("live")
    before = int(driver.find_element(By.ID, "total").text)
    hostile_arg = "<img src=x onerror=\"window.__pwned='audit'\"><script>window.__pwned='arg'</script>"
    result = mcp_call("html_desc", {"text": hostile_arg})
    assert "onerror" in result, result
    wait.until(lambda d: int(d.find_element(By.ID, "total").text) > before)
    wait.until(lambda d: "html_desc" in d.find_element(By.ID, "recent").text)
    points = driver.find_element(By.ID, "chart-line").get_attribute("points")
    assert len(points.split()) == 60, points
    inert("live")
    shot("live")

    step("audit: filter, the hostile argument as text, one record in full")
    driver.get(f"{admin}/console/audit")
    driver.find_element(By.NAME, "tool").send_keys("html_desc")
    driver.find_element(By.ID, "filter").click()
    wait.until(lambda d: "tool=html_desc" in d.current_url)
    rows = driver.find_elements(By.CSS_SELECTOR, "tr.record")
    assert rows, "no record of html_desc"
    assert all(r.find_element(By.CSS_SELECTOR, "td.tool").text == "html_desc" for r in rows)
    assert "window.__pwned='arg'" in rows[0].find_element(By.CSS_SELECTOR, "td.arguments").text
    inert("audit")
    shot("audit")
    rows[0].find_element(By.CSS_SELECTOR, "td a").click()
    wait.until(lambda d: "Audit record" in d.title)
    assert "Permission decisions" in driver.page_source
    inert("audit record")
    shot("audit-record")
    driver.get(f"{admin}/console/audit?tool=console.approve")
    approvals = driver.find_elements(By.CSS_SELECTOR, "tr.record")
    assert len(approvals) == 1 and approvals[0].find_element(By.CSS_SELECTOR, "td.client").text == "console"

    step("clients")
    driver.get(f"{admin}/console/clients")
    assert "MCP sessions open" in driver.page_source
    inert("clients")
    shot("clients")
    step("done")
    print("OK", flush=True)
except Exception as e:
    # A timed-out wait says nothing by itself: say where it stopped and what was shown.
    print(f"failed at step {current!r} after {time.monotonic() - started:.1f} s: "
          f"{type(e).__name__}: {e}", flush=True)
    print(f"page: {driver.current_url} title={driver.title!r}", flush=True)
    driver.save_screenshot(os.path.join(shots, "failure.png"))
    raise
finally:
    driver.quit()
