// The official TypeScript SDK client against one bin/server --http process:
// /mcp serves the file's default profile, /mcp/NAME profile NAME, many
// sessions at once, DNS-rebinding protection on, and a ceiling (--max-profile)
// answered 403.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';

import { checkProfile, membership } from '../lib/checks.mjs';
import { DEFAULT_PROFILE, PROFILES } from '../lib/expect.mjs';
import { CLIENT_INFO, connectHTTP, names, startHTTP } from '../lib/harness.mjs';

// fileScope gives the harness a t.after for resources shared by this file,
// run by the file's after hook (an after() called inside before() would run
// as soon as before() ends).
let fileAfter;
const fileScope = { after: (fn) => { fileAfter = fn; } };
after(async () => fileAfter?.());

let server;
before(async () => {
  server = await startHTTP(fileScope);
});

for (const profile of Object.keys(PROFILES)) {
  test(`http /mcp/${profile}`, async (t) => {
    const client = await connectHTTP(t, `${server.base}/mcp/${profile}`);
    await checkProfile(t, client, profile);
  });
}

test(`http /mcp serves the default profile (${DEFAULT_PROFILE})`, async (t) => {
  const client = await connectHTTP(t, `${server.base}/mcp`);
  await checkProfile(t, client, DEFAULT_PROFILE);
});

test('http sessions of different profiles at once do not cross', async (t) => {
  const profiles = Object.keys(PROFILES);
  const clients = await Promise.all(profiles.map((p) => connectHTTP(t, `${server.base}/mcp/${p}`)));
  const lists = await Promise.all(clients.map((c) => c.listTools()));
  profiles.forEach((p, i) => {
    assert.deepEqual([...names(lists[i])].sort(), membership(p), `session of ${p}`);
    assert.equal(clients[i].getInstructions(), PROFILES[p].instructions, `instructions of ${p}`);
  });
});

// post sends an initialize request by hand, so that the Host header and the
// path are ours to choose; it resolves with the status and body.
function post(base, path, host) {
  const url = new URL(path, base);
  const body = JSON.stringify({
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: CLIENT_INFO },
  });
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: {
        host: host ?? url.host,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(body),
      },
      agent: false, // no keep-alive connection left open
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (s) => { text += s; });
      res.on('end', () => resolve({ status: res.statusCode, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('http rejections', async (t) => {
  await t.test('an unknown profile path is 404 naming the profiles', async () => {
    const res = await post(server.base, '/mcp/no-such-profile');
    assert.equal(res.status, 404, res.body);
    for (const p of Object.keys(PROFILES)) assert.match(res.body, new RegExp(`\\b${p}\\b`), `404 body names ${p}`);
  });
  await t.test('the SDK client fails to connect to an unknown profile', async (t) => {
    await assert.rejects(connectHTTP(t, `${server.base}/mcp/no-such-profile`), /404|not found|no-such-profile/i);
  });
  await t.test('a non-loopback Host header is 403 (DNS-rebinding protection)', async () => {
    const port = new URL(server.base).port;
    const res = await post(server.base, '/mcp', `attacker.example:${port}`);
    assert.equal(res.status, 403, res.body);
    const ok = await post(server.base, '/mcp', `localhost:${port}`);
    assert.equal(ok.status, 200, `the same request with a loopback Host is served: ${ok.body}`);
  });
});

test('http --max-profile standard: full is 403, core is served', async (t) => {
  const capped = await startHTTP(t, { flags: ['--max-profile', 'standard'] });
  const res = await post(capped.base, '/mcp/full');
  assert.equal(res.status, 403, res.body);
  assert.match(res.body, /standard/, 'the 403 names the ceiling');
  const client = await connectHTTP(t, `${capped.base}/mcp/core`);
  assert.deepEqual([...names(await client.listTools())].sort(), membership('core'));
});
