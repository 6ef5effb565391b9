// js_http: an example toolhost plugin written in JavaScript (StarlingMonkey through
// componentize-js). Built by `cargo xtask plugins` into target/plugins/js_http.wasm.
//
// Tools:
// - js_http_get: GET a URL with the standard `fetch()` (wasi:http underneath). The host
//   only lets requests through to the hosts that js_http.toml allows.
// - js_add: adds two numbers x and y (no capability needed; used for latency benchmarks).
import { log } from 'toolhost:tool/host@0.1.0';

const MAX_BODY = 64 * 1024;

const TOOLS = [
  {
    name: 'js_http_get',
    description: 'Fetches a URL with HTTP GET and returns the status and the body text (first 64 KiB).',
    parameters: JSON.stringify({
      type: 'object',
      properties: { url: { type: 'string', description: 'http(s) URL to fetch' } },
      required: ['url'],
      additionalProperties: false,
    }),
    permissions: [{ tag: 'network' }],
    tags: ['example', 'javascript', 'http'],
  },
  {
    name: 'js_add',
    description: 'Adds two numbers x and y and returns the sum.',
    parameters: JSON.stringify({
      type: 'object',
      properties: { x: { type: 'number' }, y: { type: 'number' } },
      required: ['x', 'y'],
      additionalProperties: false,
    }),
    permissions: [],
    tags: ['example', 'javascript', 'math'],
  },
];

function fail(tag, message) {
  // A thrown value becomes the `err` of `result<tool-output, tool-error>`.
  return { tag, val: String(message) };
}

function output(value, render) {
  return { canonical: JSON.stringify(value), render };
}

export function describe() {
  return TOOLS;
}

async function httpGet(args) {
  if (typeof args.url !== 'string' || !/^https?:\/\//.test(args.url)) {
    throw fail('invalid-arguments', '`url` must be an http(s) URL');
  }
  log('info', `GET ${args.url}`);
  let resp;
  try {
    resp = await fetch(args.url);
  } catch (e) {
    // The host refuses requests to hosts the policy does not allow.
    throw fail('denied', `request to ${args.url} failed: ${e && e.message ? e.message : e}`);
  }
  let body = await resp.text();
  const truncated = body.length > MAX_BODY;
  if (truncated) body = body.slice(0, MAX_BODY);
  return output({ status: resp.status, body, truncated }, `HTTP ${resp.status}\n${body}`);
}

export async function call(name, argumentsJson, _ctx) {
  let args;
  try {
    args = JSON.parse(argumentsJson);
  } catch (e) {
    throw fail('invalid-arguments', `arguments are not JSON: ${e.message}`);
  }
  switch (name) {
    case 'js_http_get':
      return await httpGet(args);
    case 'js_add': {
      if (typeof args.x !== 'number' || typeof args.y !== 'number') {
        throw fail('invalid-arguments', '`x` and `y` must be numbers');
      }
      const sum = args.x + args.y;
      return output({ sum }, String(sum));
    }
    default:
      throw fail('invalid-arguments', `unknown tool ${name}`);
  }
}
