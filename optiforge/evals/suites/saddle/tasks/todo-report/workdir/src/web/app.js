// TODO(bob): debounce input
function onInput(e) {
  render(e);
}

// TODO (frank): a space breaks the marker
/* TODO(gina): tidy */
