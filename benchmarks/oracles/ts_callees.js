// The TypeScript compiler's answer for call sites: which declaration each called name means.
//
//   node ts_callees.js SITES.json > LABELS.json     (NODE_PATH holds the `typescript` package)
//
// SITES.json: {"root": DIR, "sites": [{"path": "a/b.ts", "line": 3, "col": 4, "name": "f"}, ...]}
// (line 1-based, col 0-based). Every .ts/.tsx file under root is one program; the checker's
// symbol at the name, aliases followed to the declaration, is the label: "internal" with its
// declarations' path:line under root when a function, method, class or a variable holding a
// function declares it, "external" when it is declared outside root (lib.d.ts, a dependency),
// "unknown" when the checker has no symbol or it is a parameter or property of a function type.
"use strict";
const fs = require("fs");
const path = require("path");
const ts = require("typescript");

const ask = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const root = path.resolve(ask.root);

function sources(dir, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "node_modules" || e.name.startsWith(".")) continue;
    const p = path.join(dir, e.name);
    if (e.isDirectory()) sources(p, out);
    else if (/\.(ts|tsx|mts|cts)$/.test(e.name)) out.push(p);
  }
  return out;
}

const program = ts.createProgram(sources(root, []), {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  allowImportingTsExtensions: true,
  jsx: ts.JsxEmit.Preserve,
  noEmit: true,
  skipLibCheck: true,
  strict: true,
});
const checker = program.getTypeChecker();

function identifierAt(sf, pos) {
  let found = null;
  (function visit(node) {
    if (found || pos < node.getFullStart() || pos >= node.getEnd()) return;
    if ((ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) && node.getStart(sf) === pos) {
      found = node;
      return;
    }
    ts.forEachChild(node, visit);
  })(sf);
  return found;
}

function isFunctionLike(d) {
  if (
    ts.isFunctionDeclaration(d) || ts.isMethodDeclaration(d) || ts.isMethodSignature(d) ||
    ts.isConstructorDeclaration(d) || ts.isClassDeclaration(d) || ts.isClassExpression(d) ||
    ts.isFunctionExpression(d) || ts.isArrowFunction(d) || ts.isGetAccessor(d)
  ) return true;
  if ((ts.isVariableDeclaration(d) || ts.isPropertyAssignment(d) || ts.isPropertyDeclaration(d)) && d.initializer) {
    let init = d.initializer;
    while (ts.isParenthesizedExpression(init) || ts.isAsExpression(init) || ts.isSatisfiesExpression?.(init)) init = init.expression;
    return ts.isFunctionExpression(init) || ts.isArrowFunction(init) || ts.isClassExpression(init);
  }
  return false;
}

const labels = [];
for (const site of ask.sites) {
  const sf = program.getSourceFile(path.join(root, site.path));
  let label = { kind: "unknown", at: [] };
  if (sf) {
    const pos = sf.getPositionOfLineAndCharacter(site.line - 1, site.col);
    const id = identifierAt(sf, pos);
    let sym = id && checker.getSymbolAtLocation(id);
    if (sym && sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
    const decls = (sym && sym.declarations) || [];
    const inside = [];
    let outside = false;
    let other = false;
    for (const d of decls) {
      const file = path.resolve(d.getSourceFile().fileName);
      if (!file.startsWith(root + path.sep)) {
        outside = true;
        continue;
      }
      if (!isFunctionLike(d)) {
        other = true;
        continue;
      }
      const line = d.getSourceFile().getLineAndCharacterOfPosition(d.getStart()).line + 1;
      inside.push([path.relative(root, file).split(path.sep).join("/"), line]);
    }
    if (inside.length) label = { kind: "internal", at: inside };
    else if (outside && !other) label = { kind: "external", at: [] };
  }
  labels.push(label);
}
process.stdout.write(JSON.stringify(labels));
