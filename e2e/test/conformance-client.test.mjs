// The client scenarios of the MCP conformance suite
// (@modelcontextprotocol/conformance 0.1.13, `conformance client`, pinned in
// package-lock.json) against bin/conformance-client: toolprof's own upstream
// client (upstream.Client, its OAuth handler and token store, as the gateway
// connects to a server declared with "oauth"). Every client scenario the
// pinned suite lists is run, each on its own (`--scenario`, which also fails
// a scenario whose client exited non-zero; `--suite` does not). Each must
// pass, except those in testdata/conformance-client-baseline.yml, which must
// still fail: an entry that starts passing is stale and must be removed.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { BIN_DIR, E2E_DIR, clientEnv, tempDir } from '../lib/harness.mjs';

const CONFORMANCE = path.join(E2E_DIR, 'node_modules', '.bin', 'conformance');
const CLIENT = path.join(BIN_DIR, 'conformance-client');
const BASELINE = path.join(E2E_DIR, 'testdata', 'conformance-client-baseline.yml');

// Scenarios mostly wait (on timers of the suite's servers): four at a time
// keep the 2-core CI machine idle enough.
const PARALLEL = 4;

function run(args, env, timeout = 90_000) {
  return new Promise((resolve, reject) => {
    execFile(CONFORMANCE, args, { cwd: E2E_DIR, env, timeout, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      // It exits 1 when a scenario fails; the output says why.
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

// baseline reads the scenario names listed under "client:".
function baseline() {
  const names = [];
  let inClient = false;
  for (const line of fs.readFileSync(BASELINE, 'utf8').split('\n')) {
    if (/^\S/.test(line)) inClient = /^client:\s*$/.test(line);
    const m = line.match(/^\s+-\s+(\S+)\s*$/);
    if (inClient && m) names.push(m[1]);
  }
  return names;
}

test('conformance client scenarios: toolprof\'s upstream client passes all but the baseline', async (t) => {
  assert.ok(fs.existsSync(CLIENT), `${CLIENT} does not exist: run "make build"`);
  const env = clientEnv(t);
  const listed = await run(['list', '--client'], env);
  assert.equal(listed.code, 0, listed.stderr);
  const scenarios = [...listed.stdout.matchAll(/^\s+-\s+(\S+)$/gm)].map((m) => m[1]);
  const expectedFailures = baseline();
  assert.ok(scenarios.filter((s) => s.startsWith('auth/')).length > 0, `the suite lists auth scenarios:\n${listed.stdout}`);
  for (const s of expectedFailures) {
    assert.ok(scenarios.includes(s), `baseline entry ${s} is no scenario of this suite version: remove it`);
  }

  const out = tempDir(t, 'toolprof-conformance-client-');
  const results = new Map();
  const queue = [...scenarios];
  await Promise.all(Array.from({ length: PARALLEL }, async () => {
    for (let s; (s = queue.shift()) !== undefined;) {
      results.set(s, await run(['client', '--command', CLIENT, '--scenario', s, '-o', out], env));
    }
  }));

  for (const s of scenarios) {
    const r = results.get(s);
    // The CLI prints the checks and the verdict to stderr.
    const output = r.stdout + r.stderr;
    const detail = output.slice(output.indexOf('Test Results:'));
    await t.test(s, () => {
      if (expectedFailures.includes(s)) {
        assert.notEqual(r.code, 0, `${s} is in the baseline but passes now: remove it from ${BASELINE}`);
      } else {
        assert.match(output, /OVERALL: PASSED/, `${s} passes:\n${detail}`);
        assert.equal(r.code, 0, `the conformance CLI exits 0 for ${s}:\n${detail}`);
      }
    });
  }
});
