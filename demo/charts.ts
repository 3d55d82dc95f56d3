// Rolling time-series charts (uPlot) for the demo: one card per chart with its own legend that
// shows the latest value of each series; data are trimmed to the last `windowSec` seconds.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export type Axis = 'left' | 'right';

export interface SeriesSpec {
  label: string;
  color: string;
  axis?: Axis;
  /** Fill under the line (a translucent version of the colour). */
  fill?: boolean;
  dash?: number[];
  /** Draw as steps (counts, gauges of discrete things). */
  stepped?: boolean;
  /**
   * A threshold line (a bound the data is measured against): the scale stretches up to it only
   * when it is within 4× of the data, so a far-off bound does not flatten the data.
   */
  reference?: boolean;
  /** How the legend shows the latest value. */
  format: (v: number) => string;
}

export interface ChartSpec {
  /** The element the chart draws into (its width is followed). */
  el: HTMLElement;
  /** The element the legend (label + latest value per series) is written into. */
  legend: HTMLElement;
  series: SeriesSpec[];
  /** Tick labels of the left / right axis. */
  leftTicks: (v: number) => string;
  rightTicks?: (v: number) => string;
  /** The least top of the left / right scale (an idle chart of counts then shows whole numbers). */
  leftMinTop?: number;
  rightMinTop?: number;
  height?: number;
}

function translucent(hex: string, alpha: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/** Tick label of the time axis: local wall-clock time, one line. */
const clock = (t: number): string => new Date(t * 1000).toLocaleTimeString('en-GB', { hour12: false });

/** A y scale from 0 with a little headroom, at least `minTop` high (so an all-zero series still shows an axis). */
const zeroBased =
  (minTop = 1): uPlot.Scale.Range =>
  (_u, _min, max) => [0, Math.max(minTop, max > 0 ? max * 1.12 : 0)];

/** How far above the data a reference line may be and still set the top of the scale. */
const REFERENCE_REACH = 4;

const AXIS_STYLE = {
  stroke: '#5b6472',
  font: '11px system-ui, -apple-system, "Segoe UI", sans-serif',
  grid: { stroke: '#eceff3', width: 1 },
  ticks: { stroke: '#dfe3e8', width: 1, size: 4 },
};

export class TimeChart {
  readonly plot: uPlot;
  private readonly xs: number[] = [];
  private readonly ys: (number | null)[][];
  private readonly legendValues: HTMLElement[] = [];

  constructor(
    private readonly spec: ChartSpec,
    private readonly windowSec: number,
  ) {
    this.ys = spec.series.map(() => []);
    const hasRight = spec.series.some((s) => s.axis === 'right');
    const stepped = uPlot.paths.stepped!({ align: 1 });
    const opts: uPlot.Options = {
      width: Math.max(200, spec.el.clientWidth),
      height: spec.height ?? 180,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { size: 6 } },
      padding: [8, hasRight ? 4 : 28, 0, 0],
      scales: {
        x: { time: true },
        y: { range: this.scaleRange('left', spec.leftMinTop) },
        ...(hasRight ? { y2: { range: this.scaleRange('right', spec.rightMinTop) } } : {}),
      },
      axes: [
        { ...AXIS_STYLE, space: 64, values: (_u, ticks) => ticks.map(clock) },
        { ...AXIS_STYLE, scale: 'y', size: 56, values: (_u, ticks) => ticks.map(spec.leftTicks) },
        ...(hasRight
          ? [
              {
                ...AXIS_STYLE,
                scale: 'y2',
                side: 1 as const,
                size: 52,
                grid: { show: false },
                values: (_u: uPlot, ticks: number[]) => ticks.map(spec.rightTicks ?? spec.leftTicks),
              },
            ]
          : []),
      ],
      series: [
        {},
        ...spec.series.map(
          (s): uPlot.Series => ({
            label: s.label,
            scale: s.axis === 'right' ? 'y2' : 'y',
            stroke: s.color,
            width: 1.75,
            fill: s.fill ? translucent(s.color, 0.14) : undefined,
            dash: s.dash,
            points: { show: false },
            ...(s.stepped ? { paths: stepped } : {}),
          }),
        ),
      ],
    };
    this.plot = new uPlot(opts, [[], ...this.ys] as uPlot.AlignedData, spec.el);
    this.buildLegend();
    new ResizeObserver(() => {
      const width = Math.max(200, Math.floor(spec.el.clientWidth));
      if (width !== this.plot.width) this.plot.setSize({ width, height: this.plot.height });
    }).observe(spec.el);
  }

  /** The range of the left or right scale: from 0 to its data (and reference lines within reach). */
  private scaleRange(axis: Axis, minTop = 1): uPlot.Scale.Range {
    const mine = this.spec.series.map((s, i) => ({ s, i })).filter(({ s }) => (s.axis ?? 'left') === axis);
    if (!mine.some(({ s }) => s.reference)) return zeroBased(minTop);
    return () => {
      let data = 0;
      let reference = 0;
      for (const { s, i } of mine) {
        for (const v of this.ys[i]!) {
          if (v === null) continue;
          if (s.reference) reference = Math.max(reference, v);
          else data = Math.max(data, v);
        }
      }
      const top = Math.max(minTop, data, reference <= REFERENCE_REACH * Math.max(data, minTop) ? reference : 0);
      return [0, top * 1.12];
    };
  }

  private buildLegend(): void {
    this.spec.legend.replaceChildren();
    for (const s of this.spec.series) {
      const item = document.createElement('span');
      item.className = 'legend-item';
      const swatch = document.createElement('i');
      swatch.className = s.dash ? 'swatch dashed' : 'swatch';
      swatch.style.setProperty('--c', s.color);
      const label = document.createElement('span');
      label.className = 'legend-label';
      label.textContent = s.label + (s.axis === 'right' ? ' (right)' : '');
      const value = document.createElement('b');
      value.className = 'legend-value';
      value.textContent = '–';
      item.append(swatch, label, value);
      this.spec.legend.append(item);
      this.legendValues.push(value);
    }
  }

  /**
   * Add one point per series at time `t` (seconds); null leaves a gap (no store open). Points
   * older than the window are dropped.
   */
  push(t: number, values: (number | null)[]): void {
    this.xs.push(t);
    for (const [i, v] of values.entries()) this.ys[i]!.push(v);
    const cutoff = t - this.windowSec;
    let drop = 0;
    while (drop < this.xs.length && this.xs[drop]! < cutoff) drop++;
    if (drop > 0) {
      this.xs.splice(0, drop);
      for (const y of this.ys) y.splice(0, drop);
    }
    for (const [i, v] of values.entries()) this.legendValues[i]!.textContent = v === null ? '–' : this.spec.series[i]!.format(v);
  }

  /** Redraw with the current data (x range: the last window, ending now). */
  draw(): void {
    this.plot.setData([this.xs, ...this.ys] as uPlot.AlignedData);
    const end = this.xs[this.xs.length - 1] ?? Date.now() / 1000;
    this.plot.setScale('x', { min: end - this.windowSec, max: end });
  }
}
