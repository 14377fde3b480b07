import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ApiError, parseErrorBody, toApiError } from './errors.ts'

test('parseErrorBody', () => {
  assert.deepEqual(parseErrorBody('{"code":"invalid","message":"bad join code"}'), {
    code: 'invalid',
    message: 'bad join code',
  })
  assert.deepEqual(parseErrorBody(' {"message":"x"} '), { code: 'error', message: 'x' })
  assert.equal(parseErrorBody('{"code":"x"}'), null)
  assert.equal(parseErrorBody('plain text'), null)
  assert.equal(parseErrorBody('{not json'), null)
})

test('toApiError never leaks raw JSON', () => {
  const e = toApiError('{"code":"not_found","message":"no such member"}')
  assert.equal(e.message, 'no such member')
  assert.equal(e.code, 'not_found')
  assert.equal(toApiError(new Error('join pool: timeout')).message, 'join pool: timeout')
  assert.equal(toApiError(42).message, 'unknown error')
  const orig = new ApiError('x', 'unreachable')
  assert.equal(toApiError(orig), orig)
  assert.equal(orig.unreachable, true)
})

test('toApiError keeps the code of the window {code, message}', () => {
  const e = toApiError({ code: 'forbidden', message: 'policy launch=admins: only admins launch here' })
  assert.equal(e.code, 'forbidden')
  assert.equal(e.message, 'policy launch=admins: only admins launch here')
  assert.equal(toApiError({ nothing: 1 }).message, 'unknown error')
})
