#!/usr/bin/env -S node --max-semi-space-size=4
// A small young generation keeps `ledger-verify` of millions of entries in constant, small
// memory (docs/performance.md); the CLI's other work is small either way.
import { execute } from '@oclif/core';
await execute({ dir: import.meta.url });
