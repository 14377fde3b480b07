import type uPlot from 'uplot'

/**
 * Keeps u as wide as el (at least minWidth) and as high as height() says,
 * until the returned stop is called; stop also destroys u. A component
 * mounts its plot in an $effect and returns a teardown that calls stop.
 */
export function followWidth(u: uPlot, el: HTMLElement, minWidth: number, height: () => number): () => void {
  const ro = new ResizeObserver(() => u.setSize({ width: Math.max(minWidth, el.clientWidth), height: height() }))
  ro.observe(el)
  return () => {
    ro.disconnect()
    u.destroy()
  }
}
