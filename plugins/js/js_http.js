// js_http: an example toolhost plugin written in JavaScript (StarlingMonkey through
// componentize-js). Built by `cargo xtask plugins` into target/plugins/js_http.wasm.
// Each tool is a `tool({ name, description, parameters, run })` of ./toolhost.js.
//
// Tools:
// - js_http_get: GET a URL with the standard `fetch()` (wasi:http underneath). The host
//   only lets requests through to the hosts that js_http.toml allows.
// - js_add: adds two numbers x and y (no capability needed; used for latency benchmarks).
import { log } from 'toolhost:tool/host@0.1.0';
import { denied, invalid, output, plugin, tool } from './toolhost.js';

const MAX_BODY = 64 * 1024;

const httpGet = tool({
  name: 'js_http_get',
  description: 'Fetches a URL with HTTP GET and returns the status and the body text (first 64 KiB).',
  parameters: {
    type: 'object',
    properties: { url: { type: 'string', description: 'http(s) URL to fetch' } },
    required: ['url'],
    additionalProperties: false,
  },
  permissions: ['network'],
  tags: ['example', 'javascript', 'http'],
  async run({ url }) {
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) {
      throw invalid('`url` must be an http(s) URL');
    }
    log('info', `GET ${url}`);
    let resp;
    try {
      resp = await fetch(url);
    } catch (e) {
      // The host refuses requests to hosts the policy does not allow.
      throw denied(`request to ${url} failed: ${e && e.message ? e.message : e}`);
    }
    let body = await resp.text();
    const truncated = body.length > MAX_BODY;
    if (truncated) body = body.slice(0, MAX_BODY);
    return output({ status: resp.status, body, truncated }, `HTTP ${resp.status}\n${body}`);
  },
});

const add = tool({
  name: 'js_add',
  description: 'Adds two numbers x and y and returns the sum.',
  parameters: {
    type: 'object',
    properties: { x: { type: 'number' }, y: { type: 'number' } },
    required: ['x', 'y'],
    additionalProperties: false,
  },
  permissions: [],
  tags: ['example', 'javascript', 'math'],
  run({ x, y }) {
    if (typeof x !== 'number' || typeof y !== 'number') {
      throw invalid('`x` and `y` must be numbers');
    }
    return output({ sum: x + y }, String(x + y));
  },
});

const tools = plugin([httpGet, add]);

export function describe() {
  return tools.describe();
}

export function call(name, argumentsJson, ctx) {
  return tools.call(name, argumentsJson, ctx);
}
