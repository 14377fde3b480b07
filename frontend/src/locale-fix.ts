// WebKitGTK reports the POSIX locale as navigator.language ("C") when LANG is
// C or unset, and Intl rejects that tag: uPlot builds an Intl.NumberFormat
// from it when its module loads, which would stop the whole page. This module
// is imported first by main.ts, so it runs before uPlot's.
try {
  new Intl.NumberFormat(navigator.language)
} catch {
  const fallback = 'en-US'
  Object.defineProperty(navigator, 'language', { get: () => fallback, configurable: true })
  Object.defineProperty(navigator, 'languages', { get: () => [fallback], configurable: true })
}

export {}
