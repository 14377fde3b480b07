// Compiles the pure TypeScript modules and their *.test.ts files with tsc
// into .test-out/, then runs them with Node's built-in test runner.
import { spawnSync } from 'node:child_process'
import { readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const out = join(root, '.test-out')
rmSync(out, { recursive: true, force: true })

const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
const run = (cmd, args) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit' }).status ?? 1

let rc = run(process.execPath, [tsc, '-p', 'tsconfig.test.json'])
if (rc !== 0) process.exit(rc)

const tests = readdirSync(out, { recursive: true })
  .map(String)
  .filter((f) => f.endsWith('.test.js'))
  .map((f) => join(out, f))
if (tests.length === 0) {
  console.error('no unit tests found')
  process.exit(1)
}
rc = run(process.execPath, ['--test', ...tests])
process.exit(rc)
