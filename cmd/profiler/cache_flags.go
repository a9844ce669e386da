package main

import (
	"flag"

	"github.com/toolprof/toolprof/price"
)

// addCacheFlags registers --cache-write, --cache-read and --turn-growth,
// the prompt-caching model sessions are priced with, on fs (bench with
// --trace, derive); when prefixes each usage ("with --trace: "). The
// caller checks the model (price.CacheModel.Check) after parsing.
func addCacheFlags(fs *flag.FlagSet, when string) *price.CacheModel {
	cache := price.DefaultCache()
	fs.Float64Var(&cache.Write, "cache-write", cache.Write, when+"price `multiplier` of a turn that writes the tool prefix (the first, and any whose tools changed)")
	fs.Float64Var(&cache.Read, "cache-read", cache.Read, when+"price `multiplier` of a turn that reads the cached tool prefix")
	fs.IntVar(&cache.Growth, "turn-growth", 0, when+"`tokens` of conversation each turn adds after the tools, invalidated by a tool change (0: tool prefix only, conversations taken as equal under every profile)")
	return &cache
}
