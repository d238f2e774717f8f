// Generates the TypeScript types of confab's API from its OpenAPI document
// with openapi-typescript's Node API, as docs/clients.md shows:
//
//   node gen-types.mjs openapi.json schema.ts
//   node gen-types.mjs http://127.0.0.1:8080/openapi.json schema.ts
//
// The same output as the command line's, with two settings made through its
// `transform` hooks (the command line has no flag for them), for files:
// - a `format: binary` string (an upload's `file` part) is a `Blob`;
// - a `multipart/form-data` request body is a `FormData`, which openapi-fetch
//   sends as it is (fetch writes the boundary), so an upload needs no body
//   serializer and no cast.
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";
import ts from "typescript";

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node gen-types.mjs <openapi.json or its URL> <out.ts>");
  process.exit(2);
}

const source = /^https?:\/\//.test(input) ? new URL(input) : pathToFileURL(path.resolve(input));
const type = (name) => ts.factory.createTypeReferenceNode(name);
const ast = await openapiTS(source, {
  transform(schema) {
    if (schema.format === "binary") return type("Blob");
    return undefined;
  },
  postTransform(_type, options) {
    if (options.path?.endsWith("/requestBody/content/multipart~1form-data")) return type("FormData");
    return undefined;
  },
});
fs.writeFileSync(output, astToString(ast));
