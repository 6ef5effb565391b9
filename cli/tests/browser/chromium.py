"""Headless Chromium (Debian) driven through ChromeDriver by the selenium WebDriver client
(PyPI), as the browser tests of this folder start it. Environment: TOOLHOST_CHROMIUM and
TOOLHOST_CHROMEDRIVER name the binaries (defaults: Debian's paths)."""

import os

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

# How long a browser script waits for any one thing. Generous: the scripts check
# behaviour, not speed, and CI runs them beside tests that load both cores and the disk
# (a gigabyte audit trail); they print each step's time instead.
PATIENCE_S = 90


def start(width, height):
    """A headless Chromium of `width` x `height` pixels, no GPU, no background traffic."""
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("TOOLHOST_CHROMIUM", "/usr/bin/chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", f"--window-size={width},{height}"):
        options.add_argument(flag)
    service = Service(
        executable_path=os.environ.get("TOOLHOST_CHROMEDRIVER", "/usr/bin/chromedriver"))
    return webdriver.Chrome(service=service, options=options)
