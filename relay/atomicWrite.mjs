// Build outputs are written to a temporary name and renamed into place: tests (and a relay being restarted) start
// `relay/bin/tab-relay.js` while another `npm start` rebuilds, and a reader must see the old file or the new one,
// never one cut short mid-write.
import { copyFile, mkdir, rename, writeFile } from "node:fs/promises";
import { dirname } from "node:path";

async function replace(path, write) {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  await write(temporary);
  await rename(temporary, path);
}

/** Writes the files of an esbuild result made with `write: false`. */
export async function writeOutputs(result) {
  await Promise.all(result.outputFiles.map((file) => replace(file.path, (to) => writeFile(to, file.contents))));
}

export async function copyAtomically(from, to) {
  await replace(to, (temporary) => copyFile(from, temporary));
}

export async function writeAtomically(path, contents) {
  await replace(path, (temporary) => writeFile(temporary, contents));
}
