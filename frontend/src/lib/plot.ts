import type uPlot from 'uplot'

/**
 * Mounts a plot in el: make builds it for el's width (at least minWidth),
 * set receives it (and null once it is gone); it then follows el's width
 * and height(). The returned teardown destroys it: a component calls
 * mountPlot in an $effect and returns what it returns.
 */
export function mountPlot(
  el: HTMLElement,
  minWidth: number,
  height: () => number,
  make: (width: number) => uPlot,
  set: (u: uPlot | null) => void,
): () => void {
  const u = make(Math.max(minWidth, el.clientWidth))
  set(u)
  const ro = new ResizeObserver(() => u.setSize({ width: Math.max(minWidth, el.clientWidth), height: height() }))
  ro.observe(el)
  return () => {
    ro.disconnect()
    u.destroy()
    set(null)
  }
}

/** The value of the CSS variable name on el (so a plot draws in the theme's colours), else fallback. */
export function cssVar(el: Element | undefined, name: string, fallback: string): string {
  const v = el ? getComputedStyle(el).getPropertyValue(name).trim() : ''
  return v || fallback
}
