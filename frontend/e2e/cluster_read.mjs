// Reading a Slurm cluster's panel (the card on the dashboard, the machine
// view) back from the DOM, for the browser tests of a cluster: against a
// fixture (cluster_ui.mjs) and against a real Slurm (slurm_ui.mjs). Run in
// the page: locator.evaluate(readCluster).

/** Reads the cluster panel under root. */
export function readCluster(root) {
  const all = (sel) => [...root.querySelectorAll(sel)]
  const attr = (el, a) => el.getAttribute(a)
  return {
    name: root.querySelector('[data-testid="cluster-name"]')?.textContent.trim(),
    runtime: root.querySelector('[data-testid="cluster-runtime"]')?.textContent.trim(),
    gpus: all('[data-testid="cluster-gpu-meter"]').map((m) => m.textContent.replace(/\s+/g, ' ').trim()),
    partitions: all('[data-testid="cluster-partition"]').map((p) => `${attr(p, 'data-name')}:${attr(p, 'data-state')}`),
    nodes: all('[data-testid="cluster-node"]').map((n) => `${attr(n, 'data-name')}:${attr(n, 'data-state')}:${n.querySelectorAll('td')[2].textContent.trim()}`),
    running: root.querySelector('[data-testid="cluster-running"]')?.textContent.trim(),
    pending: root.querySelector('[data-testid="cluster-pending"]')?.textContent.trim(),
    queue: all('[data-testid="cluster-queue-job"]').map((q) => ({
      id: attr(q, 'data-id'),
      state: attr(q, 'data-state'),
      reason: q.querySelector('[data-testid="cluster-queue-reason"]')?.textContent.trim() ?? '',
      owner: q.querySelector('[data-testid="cluster-queue-owner"]')?.textContent.trim(),
      labpool: q.querySelector('[data-testid="cluster-queue-owner"]')?.getAttribute('data-labpool') === 'true',
    })),
  }
}
