import type { Move, SelectEmbed, SelectItem } from "./ast.ts";

/** The parameters of one embed: every path that named it, and the path whose order and whose range it takes. */
export interface EmbedParams {
  paths: string[];
  order?: string;
  range?: string;
}

/** Where the parameters of embedded resources go, and the order of each select list's embeds. */
export interface EmbedPlacement {
  params: Map<SelectEmbed, EmbedParams>;
  /** The embeds of a select list in output order, for the lists a parameter reordered (others: select order). */
  forests: Map<SelectItem[], SelectEmbed[]>;
  /** The first name a parameter's path did not find (PGRST108), if any. */
  missing?: string;
}

/**
 * Places each parameter of an embedded resource (`a.b.order`, `a.id`, `a.limit`, `a.or`) as PostgREST v14's
 * plan does: in its order of application (`moves`), a path finds at each level the first embed whose name or
 * alias is the segment, and moves it to the front of its list. So `projects.order` goes to the first of
 * `projects(*)` and `p:projects(*)` (an alias does not hide the name), and the embeds a parameter named come
 * out first after the columns, the last one moved first.
 */
export function placeEmbedParams(select: SelectItem[], moves: Move[]): EmbedPlacement {
  const placement: EmbedPlacement = { params: new Map(), forests: new Map() };
  const forestOf = (items: SelectItem[]) => {
    let forest = placement.forests.get(items);
    if (!forest) {
      forest = items.filter((i): i is SelectEmbed => i.kind === "embed");
      placement.forests.set(items, forest);
    }
    return forest;
  };
  for (const move of moves) {
    let items = select;
    for (let i = 0; i < move.path.length; i++) {
      const segment = move.path[i]!;
      const forest = forestOf(items);
      // A spread has no alias in PostgREST's plan: only its relation's name finds it.
      const at = forest.findIndex((e) => e.name === segment || (!e.spread && e.alias === segment));
      if (at < 0) {
        placement.missing ??= segment;
        break;
      }
      const embed = forest[at]!;
      forest.splice(at, 1);
      forest.unshift(embed);
      if (i === move.path.length - 1) {
        const path = move.path.join(".");
        let params = placement.params.get(embed);
        if (!params) placement.params.set(embed, params = { paths: [] });
        if (!params.paths.includes(path)) params.paths.push(path);
        // Each order or range replaces the one before it: the last applied is kept.
        if (move.kind === "order") params.order = path;
        if (move.kind === "range") params.range = path;
      }
      items = embed.select;
    }
  }
  return placement;
}
