// The suite's expectations (lib/expect.mjs) and its profiles file
// (testdata/profiles.generated.toml) describe the same profiles: the server's
// health report, on that file over the everything-server, names exactly the
// expected profiles and default, warns of nothing, and counts the expected
// upstream tools.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';

import { DEFAULT_PROFILE, EVERYTHING_TOOLS, PROFILES } from '../lib/expect.mjs';
import { EVERYTHING, PROFILES_FILE, SERVER, serverEnv } from '../lib/harness.mjs';

test('server --health on the suite\'s profiles file matches lib/expect.mjs', async (t) => {
  const { stdout, stderr } = await new Promise((resolve, reject) => {
    execFile(SERVER, ['--profiles', PROFILES_FILE, '--health', '--', EVERYTHING], { env: serverEnv(t), timeout: 30_000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`server --health: ${err.message}\nstderr:\n${stderr}`));
      resolve({ stdout, stderr });
    });
  });
  const health = JSON.parse(stdout);
  assert.equal(health.default, DEFAULT_PROFILE);
  assert.deepEqual([...health.profiles].sort(), Object.keys(PROFILES).sort());
  assert.deepEqual(health.warnings ?? [], [], `no warnings; stderr:\n${stderr}`);
  assert.equal(health.upstream?.tools, EVERYTHING_TOOLS.length);
});
