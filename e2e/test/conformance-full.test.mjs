// The MCP conformance suite (@modelcontextprotocol/conformance 0.1.13,
// `conformance server`, pinned in package-lock.json) passes every check
// through the gateway: bin/server --http serving profile full over the
// everything-server (stdio), exactly as the everything-server passes it on
// its own in stateful HTTP mode (40 of 40). No baseline of known failures:
// the gateway forwards resources, prompts, completion, subscriptions,
// logging, progress, elicitation and sampling, so any failure is a
// regression, and the test asserts the whole suite rather than comparing
// against a baseline file.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

import { E2E_DIR, clientEnv, startHTTP } from '../lib/harness.mjs';

const CONFORMANCE = path.join(E2E_DIR, 'node_modules', '.bin', 'conformance');

test('conformance server suite through the gateway: Total: 40 passed, 0 failed', async (t) => {
  const server = await startHTTP(t);
  const run = await new Promise((resolve, reject) => {
    execFile(CONFORMANCE, ['server', '--url', `${server.base}/mcp/full`], {
      cwd: E2E_DIR, env: clientEnv(t), timeout: 120_000, maxBuffer: 16 << 20,
    }, (err, stdout, stderr) => {
      // It exits 1 when a check fails; the summary says which.
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
  const at = run.stdout.lastIndexOf('=== SUMMARY ===');
  const summary = at >= 0 ? run.stdout.slice(at) : run.stdout;
  assert.match(summary, /^Total: 40 passed, 0 failed$/m, `every check passes:\n${summary}\n${run.stderr}\ngateway stderr:\n${server.stderr()}`);
  assert.equal(run.code, 0, `the conformance CLI exits 0:\n${summary}`);
});
