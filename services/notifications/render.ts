import { errors } from "../../lib/errors.ts";

/** Limits of template rendering: source size, parse cost, render time and memory. */
export const TEMPLATE_LIMITS = {
  /** Characters of template source. */
  maxSourceChars: 100_000,
  /** Liquid's parse limit (characters parsed per call). */
  parseLimit: 200_000,
  /** Liquid's render time limit, in milliseconds. */
  renderLimitMs: 200,
  /** Liquid's memory limit (string and array lengths allocated by filters and loops). */
  memoryLimit: 10_000_000,
  /** Characters of rendered output kept. */
  maxOutputChars: 1_000_000,
};

type Liquid = InstanceType<typeof import("liquidjs").Liquid>;
let liquid: Promise<Liquid> | undefined;

/** The template engine, loaded on first use: a process that never meets a template does not hold the package. */
function engine(): Promise<Liquid> {
  liquid ??= import("liquidjs").then(({ Liquid }) =>
    new Liquid({
      ownPropertyOnly: true,
      strictVariables: true,
      strictFilters: true,
      parseLimit: TEMPLATE_LIMITS.parseLimit,
      renderLimit: TEMPLATE_LIMITS.renderLimitMs,
      memoryLimit: TEMPLATE_LIMITS.memoryLimit,
      cache: 500,
      relativeReference: false,
      // No file system: `include` and `render` tags find nothing.
      fs: {
        exists: () => Promise.resolve(false),
        existsSync: () => false,
        readFile: () => Promise.reject(new Error("Templates cannot include files")),
        readFileSync: () => {
          throw new Error("Templates cannot include files");
        },
        resolve: (_root: string, file: string) => file,
      },
    })
  );
  return liquid;
}

function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message.split("\n")[0] ?? "").replace(/, line:\d+, col:\d+$/, "").slice(0, 300);
}

/** Checks that a template parses; throws 400 VALIDATION_ERROR naming the field otherwise. */
export async function checkTemplate(field: string, source: string): Promise<void> {
  if (source.length > TEMPLATE_LIMITS.maxSourceChars) {
    throw errors.validation(`Template ${field} is longer than ${TEMPLATE_LIMITS.maxSourceChars} characters`);
  }
  const liquid = await engine();
  try {
    liquid.parse(source);
  } catch (err) {
    throw errors.validation(`Template ${field} does not parse: ${firstLine(err)}`);
  }
}

/**
 * Renders one template source with `variables` under the limits above. A missing variable, an unknown filter,
 * a loop past the limits or a render past its time budget is a 400 VALIDATION_ERROR that names the field.
 */
export async function renderTemplate(
  field: string,
  source: string,
  variables: Record<string, unknown>,
): Promise<string> {
  await checkTemplate(field, source);
  const liquid = await engine();
  try {
    const out = await liquid.parseAndRender(source, structuredClone(variables));
    if (out.length > TEMPLATE_LIMITS.maxOutputChars) {
      throw new Error(`output is longer than ${TEMPLATE_LIMITS.maxOutputChars} characters`);
    }
    return out;
  } catch (err) {
    throw errors.validation(`Template ${field} cannot be rendered: ${firstLine(err)}`);
  }
}
