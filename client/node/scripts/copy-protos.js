'use strict';
// prepack: copies the protos the client loads at run time (PROTO_FILES in
// src/proto.js) from the repository's proto/ into client/node/proto/, so
// that the tarball carries them; postpack removes the copy again. The copy
// is made from the repository at pack time, so it cannot go stale; the
// pack-and-install test (scripts/pack-install.js) compares it anyway.

const fs = require('node:fs');
const path = require('node:path');

const { PROTO_FILES } = require('../src/proto');

const source = path.join(__dirname, '..', '..', '..', 'proto');
const target = path.join(__dirname, '..', 'proto');
fs.rmSync(target, { recursive: true, force: true });
for (const file of PROTO_FILES) {
  fs.mkdirSync(path.dirname(path.join(target, file)), { recursive: true });
  fs.copyFileSync(path.join(source, file), path.join(target, file));
}
