// The official TypeScript SDK client against bin/server over stdio: one
// server process per session, the profile chosen by flag, environment or the
// file's default.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { checkProfile } from '../lib/checks.mjs';
import { DEFAULT_PROFILE, PROFILES } from '../lib/expect.mjs';
import { connectStdio } from '../lib/harness.mjs';

for (const profile of Object.keys(PROFILES)) {
  test(`stdio --profile ${profile}`, async (t) => {
    const { client } = await connectStdio(t, { flags: ['--profile', profile] });
    await checkProfile(t, client, profile);
  });
}

// Which profile a stdio session gets when no --profile is given.
const selections = [
  { name: 'no flag, no environment: the file\'s default', env: {}, want: DEFAULT_PROFILE },
  { name: 'TOOLPROF_PROFILE', env: { TOOLPROF_PROFILE: 'standard' }, want: 'standard' },
];
for (const { name, env, want } of selections) {
  test(`stdio profile selection: ${name}`, async (t) => {
    assert.notEqual(PROFILES[want], undefined);
    const { client } = await connectStdio(t, { env });
    await checkProfile(t, client, want);
  });
}
