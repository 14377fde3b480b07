import './locale-fix.ts'
import { mount } from 'svelte'
import './app.css'
import './styles/controls.css'
import './styles/chart.css'
import './styles/views.css'
import { connect } from './api/index.ts'
import App from './App.svelte'

const target = document.getElementById('app')!

/** Shows a start-up failure as text instead of leaving "Loading…" forever. */
function fail(what: string, err: unknown) {
  const p = document.createElement('p')
  p.style.cssText = 'font-family: system-ui, sans-serif; color: #f28b82; padding: 2rem'
  p.textContent = `labpool could not start its interface (${what}): ${err instanceof Error ? err.message : String(err)}`
  target.replaceChildren(p)
}

connect()
  .then((api) => {
    target.replaceChildren()
    mount(App, { target, props: { api } })
  })
  .catch((err) => fail('connect', err))
