// Recreates frontend/dist/.keep after `vite build` (which empties dist/),
// so the Go embed pattern all:frontend/dist always has a file to match.
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const keep = fileURLToPath(new URL('../dist/.keep', import.meta.url))
writeFileSync(keep, '')
