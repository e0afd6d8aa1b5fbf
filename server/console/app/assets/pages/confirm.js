// The confirmation every action passes through: a modal <dialog> that
// names what will change, with Cancel focused first so Enter does not
// destroy anything by accident. Escape cancels.
import { h } from '../dom.js';

/**
 * Asks; resolves true when the operator confirms. body is nodes; danger
 * styles the confirm button as destructive.
 */
export function confirmAction({ title, body, confirmLabel, danger = true }) {
  return new Promise((resolve) => {
    const cancel = h('button', { type: 'button', value: 'cancel' }, 'Cancel');
    const ok = h('button', { type: 'button', value: 'ok', class: danger ? 'danger' : 'primary' }, confirmLabel);
    const dialog = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-title' },
      h('h2', { id: 'confirm-title' }, title),
      h('div', { class: 'confirm-body' }, body),
      h('div', { class: 'buttons' }, cancel, ok));
    const finish = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    cancel.addEventListener('click', () => finish(false));
    ok.addEventListener('click', () => finish(true));
    dialog.addEventListener('cancel', (e) => { e.preventDefault(); finish(false); });
    document.body.appendChild(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/** A button that runs an action and reports its error next to itself. */
export function actionButton(label, run, { danger = true } = {}) {
  const status = h('span', { class: 'action-status', role: 'status' });
  const button = h('button', { type: 'button', class: danger ? 'danger' : null, on: { click: async () => {
    button.disabled = true;
    status.replaceChildren();
    try {
      await run(status);
    } catch (err) {
      const reason = err.reason ? ` ${err.reason}` : '';
      status.replaceChildren(h('span', { class: 'error-inline', role: 'alert' }, `${err.code || 'error'}${reason}: ${err.message}`));
    } finally {
      button.disabled = false;
      // The button was disabled while its dialog had the focus, so the
      // closing dialog could not hand the focus back: give it back here.
      if (button.isConnected && (!document.activeElement || document.activeElement === document.body)) button.focus();
    }
  } } }, label);
  return h('span', { class: 'action' }, button, status);
}
