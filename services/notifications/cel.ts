import { errors } from "../../lib/errors.ts";

type Environment = InstanceType<typeof import("@marcbachmann/cel-js").Environment>;
let environment: Promise<Environment> | undefined;

/** The CEL environment, loaded on first use: a process that never meets a rule does not hold the package. */
function celEnvironment(): Promise<Environment> {
  // `type` is a CEL built-in: the event is exposed as the variable `event` (event.type, event.data.…).
  environment ??= import("@marcbachmann/cel-js").then(({ Environment }) =>
    new Environment({
      limits: {
        maxAstNodes: 2000,
        maxDepth: 50,
        maxListElements: 1000,
        maxMapEntries: 1000,
        maxCallArguments: 16,
      },
    }).registerVariable("event", "map")
  );
  return environment;
}

function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message.split("\n")[0] ?? "").slice(0, 300);
}

/**
 * Type-checks a CEL expression over `event` when a rule is saved; `expect` is the result type it must have
 * (`dyn` also passes, since event fields are dynamic). Invalid expressions are 400 VALIDATION_ERROR.
 */
export async function checkExpression(
  field: string,
  source: string,
  expect: "bool" | "string",
): Promise<void> {
  if (source.length > 4000) throw errors.validation(`${field} is longer than 4000 characters`);
  const env = await celEnvironment();
  let result: { valid: boolean; type?: string; error?: unknown };
  try {
    result = env.check(source);
  } catch (err) {
    throw errors.validation(`${field} is not a valid CEL expression: ${firstLine(err)}`);
  }
  if (!result.valid) {
    throw errors.validation(`${field} is not a valid CEL expression: ${firstLine(result.error)}`);
  }
  if (result.type !== expect && result.type !== "dyn") {
    throw errors.validation(`${field} must be a ${expect} expression, not ${result.type}`);
  }
}

/** The event as CEL sees it. */
export interface CelEvent {
  type: string;
  data: unknown;
}

/** Evaluates a checked expression; throws an Error with a one-line message when evaluation fails. */
export async function evaluateExpression(source: string, event: CelEvent): Promise<unknown> {
  const env = await celEnvironment();
  try {
    return env.evaluate(source, { event });
  } catch (err) {
    throw new Error(firstLine(err));
  }
}
