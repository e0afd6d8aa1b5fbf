'use strict';
// consumer.js with its crash points wired to the crash test: at each point
// the plan (PLAN, a JSON list of `${eventId}:${point}`) names, it asks the
// test (PROBE_URL) what to do, and the test either answers "go",
// answers "drop" (the consumer cuts its RabbitMQ connection without acking
// and carries on until the connection is gone), or kill -9s this process
// while it waits for the answer.

const { run } = require('../consumer');

const url = process.env.PROBE_URL;
const plan = new Set(JSON.parse(process.env.PLAN || '[]'));

run({
  async at(point, { drop, ...info }) {
    if (!plan.has(`${info.eventId}:${point}`)) return;
    const res = await fetch(url, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pid: process.pid, point, ...info }),
    });
    const { action } = await res.json();
    if (action === 'drop') drop();
  },
});
