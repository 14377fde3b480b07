import { mount } from 'svelte'
import './app.css'
import { connect } from './api/index.ts'
import App from './App.svelte'

const target = document.getElementById('app')!
void connect().then((api) => {
  target.replaceChildren()
  mount(App, { target, props: { api } })
})
