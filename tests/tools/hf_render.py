#!/usr/bin/env python3
"""Renders a chat template the way Hugging Face transformers' apply_chat_template does, for tests
that compare rill's Jinja engine with it on conversations the shared cases lack (tool calls and
tool results): Jinja2's immutable sandbox with trim_blocks, lstrip_blocks and loopcontrols, tojson
as transformers defines it (ensure_ascii off, keys in the order given), raise_exception and
strftime_now. The environment is configured here; the rendering is Jinja2's own.
    hf_render.py TEMPLATE.jinja CONVERSATION.json BOS EOS > rendered.txt
CONVERSATION.json: {"messages": [...], "tools": [...], "add_generation_prompt": true, other kwargs}.
"""
import json
import sys
from datetime import datetime

from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def tojson(value, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def main():
    template_path, conversation_path, bos, eos = sys.argv[1:5]
    with open(template_path, encoding="utf-8") as f:
        source = f.read()
    with open(conversation_path, encoding="utf-8") as f:
        conversation = json.load(f)
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    kwargs = dict(conversation)
    kwargs.setdefault("add_generation_prompt", True)
    text = env.from_string(source).render(bos_token=bos, eos_token=eos, **kwargs)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
