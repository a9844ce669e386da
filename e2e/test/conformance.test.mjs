// The MCP conformance suite (@modelcontextprotocol/conformance 0.1.13,
// `conformance server`) against bin/server --http serving profile full over
// the everything-server, with the known failures of the gateway listed in
// testdata/conformance-baseline.yml: a failure not listed there fails this
// test; a listed scenario that now passes is reported as a diagnostic (the
// baseline should then shrink) without failing, since the gateway's
// forwarding is growing under several hands at once.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { E2E_DIR, clientEnv, startHTTP } from '../lib/harness.mjs';

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

// scenarioResults parses the CLI's summary lines ("✓ name: ..." or
// "✗ name: ...") into a map of scenario to passed.
function scenarioResults(stdout) {
  const at = stdout.lastIndexOf('=== SUMMARY ===');
  assert.ok(at >= 0, `the conformance CLI printed no summary:\n${stdout}`);
  const results = new Map();
  for (const m of stdout.slice(at).matchAll(/^\s*([✓✗])\s+([a-z0-9-]+):/gm)) {
    results.set(m[2], m[1] === '✓');
  }
  return results;
}

test('conformance server suite through /mcp/full: only the baseline\'s known failures', async (t) => {
  const known = baseline();
  assert.ok(known.length > 0, `${BASELINE} lists scenarios under server:`);
  for (const r of REQUIRED) assert.ok(!known.includes(r), `${r} is the gateway's own job; it may not be a known failure in ${BASELINE}`);

  const server = await startHTTP(t);
  const run = await new Promise((resolve, reject) => {
    execFile('npx', ['--no-install', 'conformance', 'server', '--url', `${server.base}/mcp/full`], {
      cwd: E2E_DIR, env: clientEnv(t), timeout: 120_000, maxBuffer: 16 << 20,
    }, (err, stdout, stderr) => {
      // It exits 1 when any scenario fails; the summary says which.
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
  const results = scenarioResults(run.stdout);
  const summary = run.stdout.slice(run.stdout.lastIndexOf('=== SUMMARY ==='));
  for (const r of REQUIRED) {
    assert.equal(results.get(r), true, `${r} passes:\n${summary}`);
  }
  const unexpected = [...results].filter(([name, passed]) => !passed && !known.includes(name)).map(([name]) => name);
  assert.deepEqual(unexpected, [], `scenarios failing that ${BASELINE} does not list:\n${summary}\n${run.stderr}`);
  // A known failure that now passes is news, not a failure: the gateway is
  // growing and several people change it at once. The baseline should shrink.
  const stale = known.filter((name) => results.get(name) === true);
  if (stale.length) t.diagnostic(`now passing, remove from ${path.basename(BASELINE)}: ${stale.join(', ')}`);
  const missing = known.filter((name) => !results.has(name));
  assert.deepEqual(missing, [], `baseline scenarios the conformance suite did not run (misspelt?)`);
});
