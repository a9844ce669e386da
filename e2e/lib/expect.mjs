// What the suite expects of the server started on testdata/profiles.generated.toml
// over the go-sdk conformance everything-server. Kept beside the profiles file:
// an edit of one is an edit of the other (test/profiles-file.test.mjs checks that the
// server serves exactly these profile names and this default).

// EVERYTHING_TOOLS mirrors internal/testupstream.EverythingTools: the tools the
// everything-server offers, so the ones "full" serves.
export const EVERYTHING_TOOLS = [
  'json_schema_2020_12_tool',
  'test_audio_content',
  'test_elicitation',
  'test_elicitation_sep1034_defaults',
  'test_elicitation_sep1330_enums',
  'test_embedded_resource',
  'test_error_handling',
  'test_image_content',
  'test_input_required_result_capabilities',
  'test_input_required_result_elicitation',
  'test_input_required_result_list_roots',
  'test_input_required_result_multi_round',
  'test_input_required_result_multiple_inputs',
  'test_input_required_result_request_state',
  'test_input_required_result_sampling',
  'test_input_required_result_tampered_state',
  'test_logging_tool',
  'test_missing_capability',
  'test_multiple_content_types',
  'test_reconnection',
  'test_sampling',
  'test_simple_text',
  'test_streaming_elicitation',
  'test_tool_with_logging',
  'test_tool_with_progress',
  'test_trigger_prompt_change',
  'test_trigger_tool_change',
  'test_x_mcp_header',
];

// DEFAULT_PROFILE is the file's default = "...".
export const DEFAULT_PROFILE = 'core';

// ENABLE_TOOLS is the tool a session calls to switch a group on (groups.EnableToolsName).
export const ENABLE_TOOLS = 'enable_tools';

// PROFILES: per profile, its exact tools (before any group is switched on),
// its instructions as TOML decodes them (a """ string keeps its final newline),
// the groups it offers, and a tool the upstream offers that it refuses.
export const PROFILES = {
  core: {
    tools: ['test_error_handling', 'test_image_content', 'test_simple_text'],
    instructions: 'core (e2e): text, image and error tools of the everything-server.\n',
    groups: [],
    refused: 'test_audio_content',
  },
  standard: {
    tools: [
      'json_schema_2020_12_tool',
      'test_audio_content',
      'test_embedded_resource',
      'test_error_handling',
      'test_image_content',
      'test_multiple_content_types',
      'test_simple_text',
      'test_tool_with_progress',
    ],
    instructions: 'standard (e2e): content tools of every type, progress and schema tools.\n',
    groups: [],
    refused: 'test_logging_tool',
  },
  grouped: {
    tools: ['test_simple_text'],
    instructions: 'grouped (e2e): simple text; switch on the media group for audio and images.\n',
    groups: ['media'],
    refused: 'test_audio_content',
  },
  full: {
    tools: EVERYTHING_TOOLS,
    instructions: 'full (e2e): every tool of the everything-server.\n',
    groups: [],
    refused: null, // full holds every tool
  },
};

// GROUPS: the [[group]] tables.
export const GROUPS = {
  media: { tools: ['test_audio_content', 'test_image_content'] },
};

// profilesWith lists, sorted, the profiles holding tool (what the
// tool_not_in_profile message names).
export function profilesWith(tool) {
  return Object.keys(PROFILES)
    .filter((p) => PROFILES[p].tools.includes(tool))
    .sort();
}

// SIMPLE_TEXT is what the everything-server's test_simple_text returns.
export const SIMPLE_TEXT = 'This is a simple text response for testing.';

// PAGE_SIZE is the --page-size the suite starts the server with: small, so
// that "standard" (8 tools) has a first, a middle and a last page.
export const PAGE_SIZE = 3;
