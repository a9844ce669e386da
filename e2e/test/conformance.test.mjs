// The MCP conformance suite (@modelcontextprotocol/conformance 0.1.13,
// `conformance server`) against bin/server --http serving profile full over
// the everything-server, with the known failures of the gateway listed in
// testdata/conformance-baseline.yml: a new failure fails this test, and so
// does a listed scenario that now passes (the baseline must then shrink).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { E2E_DIR, clientEnv, startHTTP, tempDir } from '../lib/harness.mjs';

const BASELINE = path.join(E2E_DIR, 'testdata', 'conformance-baseline.yml');

// Scenarios of what the gateway itself does: never acceptable as known failures.
const REQUIRED = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-image',
  'tools-call-audio',
  'tools-call-embedded-resource',
  'tools-call-mixed-content',
  'tools-call-error',
  'dns-rebinding-protection',
];

// baseline reads the server scenario names of the baseline file.
function baseline() {
  const lines = fs.readFileSync(BASELINE, 'utf8').split('\n');
  const names = [];
  let inServer = false;
  for (const line of lines) {
    if (/^\S/.test(line) && !line.startsWith('#')) inServer = line.trim() === 'server:';
    const m = /^\s+-\s+(\S+)\s*$/.exec(line);
    if (inServer && m) names.push(m[1]);
  }
  return names;
}

test('conformance server suite through /mcp/full: only the baseline\'s known failures', async (t) => {
  const known = baseline();
  assert.ok(known.length > 0, `${BASELINE} lists scenarios under server:`);
  for (const r of REQUIRED) assert.ok(!known.includes(r), `${r} is the gateway's own job; it may not be a known failure in ${BASELINE}`);

  const server = await startHTTP(t);
  const out = tempDir(t);
  const run = await new Promise((resolve, reject) => {
    execFile('npx', ['--no-install', 'conformance', 'server',
      '--url', `${server.base}/mcp/full`,
      '--expected-failures', BASELINE,
      '--output-dir', out,
    ], { cwd: E2E_DIR, env: clientEnv(t), timeout: 120_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
  const summary = run.stdout.slice(run.stdout.lastIndexOf('=== SUMMARY ==='));
  assert.equal(run.code, 0, `conformance exit code: a failure outside ${BASELINE}, or a listed scenario that now passes (delete its line):\n${summary}\n${run.stderr}`);
  for (const r of REQUIRED) assert.match(summary, new RegExp(`✓ ${r}:`), `${r} passed`);
});
