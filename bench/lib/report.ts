import type { Figure, ScenarioResult } from "./types.js";

function show(value: Figure | undefined): string {
  if (value === null || value === undefined) return "–";
  if (typeof value === "number")
    return Number.isFinite(value) ? value.toLocaleString("en-US") : String(value);
  return value;
}

/** The scenario's rows as an aligned text table: one column per figure name, in order of appearance. */
export function formatTable(result: ScenarioResult): string {
  const columns: string[] = [];
  for (const row of result.rows)
    for (const name of Object.keys(row.figures)) if (!columns.includes(name)) columns.push(name);
  const header = ["", ...columns];
  const lines = result.rows.map((row) => [row.name, ...columns.map((c) => show(row.figures[c]))]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? "").length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ");
  const out = [format(header), widths.map((w) => "-".repeat(w)).join("  "), ...lines.map(format)];
  for (const note of result.notes ?? []) out.push(`  note: ${note}`);
  return out.join("\n");
}
