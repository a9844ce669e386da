// Package launch reads the declarations of the MCP servers toolprof fronts and
// turns them into a versioned launch document.
//
// # Two levels
//
// The pack level is an .mcp.json file in the format MCP clients already use:
//
//	{"mcpServers": {
//	  "files":  {"command": "npx", "args": ["-y", "pkg"], "env": {"TOKEN": "${TOKEN}"}, "cwd": "work"},
//	  "remote": {"type": "http", "url": "https://host/mcp", "headers": {"Authorization": "${AUTH}"}}
//	}}
//
// The persona level is a file in the same format at personas/NAME.mcp.json,
// beside the pack file, selected by name (--persona NAME). Its servers are
// merged on top of the pack's: a new name adds a server, an existing name
// replaces the pack's entry entirely (no partial merge of fields). An unknown
// persona is an error listing the personas that exist. The merge yields a
// [Document] with Version 1 and its servers sorted by name.
//
// # Entries
//
// An entry without "type" (or with "stdio") runs "command" with "args",
// "env" and "cwd" (a relative cwd is taken from the directory of the file
// that declares it). A command without a '/' is looked up on PATH; a
// relative path is taken from the cwd, else from the declaring file's
// directory, and made absolute when resolving, so that it never depends
// on the gateway's working directory ([ResolvedServer.LookCommand] checks
// it can be run). "type" "http", "streamable_http" or "streamableHttp"
// connects to "url" with "headers"; an entry with a "url" and no "type" is
// streamable HTTP too. "type" "sse" is refused: SSE is unsupported, migrate
// to streamable_http. Decoding is strict: an unknown key, a value of the
// wrong type, a missing command or url, or a command and url together fail
// with the file, line, server and key. An HTTP entry may carry "oauth"
// ([OAuth]): {} discovers everything, or it names a pre-registered
// client_id and client_secret, scopes and a redirect_port; the resolved
// client_secret is a secret like any ${NAME} value. Server names are limited to letters,
// digits, '_', '-' and '.' because they prefix tool names.
//
// # Separator
//
// With several servers, tool and prompt names are served as server, a
// separator and the server's own name: "files__read_file". The separator is
// "__" unless the file sets the optional top-level key "separator" (one to
// three of '_', '-' and '.'), next to "mcpServers"; a persona that sets it
// wins over the pack.
//
// # Variables
//
// ${NAME} in command, args, env values, cwd, url and header values is
// replaced at start ([Document.Resolve]) from a supplied environment lookup
// (os.LookupEnv in production). ${NAME:-default} uses default when NAME is
// unset or empty, as Claude Code does. A bare $NAME is left as written
// (clients do not expand it either). There is no escape for a literal "${":
// any "${" that is not a well-formed reference is an error, so no template
// ever reaches an upstream; references do not nest, so a default holding
// "${" is an error too. Substitution is a single pass: a value that
// itself contains "${" is passed on as the user set it.
//
// Resolved values are secrets. The Document keeps the templates; a
// [Resolved] carries the values for connecting and is printed only through
// [Resolved.Redacted], which shows args, url, command and cwd as written
// (variables as ${NAME}) and every env and header value as its template when
// the template is made only of variable references, otherwise "<redacted>"
// (literal text there may be a credential typed into the file).
// [ResolvedServer.Scrub] removes resolved values from any message.
//
// Nothing is written anywhere: the launch document lives in memory and no
// .mcp.json is placed in an upstream's working directory.
package launch
