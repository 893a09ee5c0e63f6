// Filters (Jinja2 3.1 built-ins plus transformers' tojson) and the str/dict/list methods templates call.
#include <gtest/gtest.h>

#include "tokenizer_jinja/render_util.h"

using grpo::jinja::testing::render;
using grpo::jinja::testing::render_error;

namespace {
const char* kCtx = R"({"s": "Hello World", "l": [3, 1, 2], "d": {"b": 1, "a": 2}, "e": "",
  "msgs": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye"}]})";
}

TEST(JinjaFilters, SequenceFilters) {
  EXPECT_EQ(render("{{ l | length }} {{ s | count }} {{ d | length }} {{ l | first }} {{ l | last }} {{ s | first }} {{ s | last }}", kCtx),
            "3 11 2 3 2 H d");
  EXPECT_EQ(render("{{ l | join(', ') }} {{ l | join }} {{ msgs | join('|', attribute='role') }}", kCtx),
            "3, 1, 2 312 user|assistant|user");
  EXPECT_EQ(render("{{ l | sort }} {{ l | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }}", kCtx),
            "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c']");
  EXPECT_EQ(render("{{ [{'a': 2}, {'a': 1}] | sort(attribute='a') }}"), "[{'a': 1}, {'a': 2}]");
  EXPECT_EQ(render("{{ l | max }} {{ l | min }} {{ l | sum }} {{ msgs | sum(attribute='content', start='') if false else 0 }}", kCtx),
            "3 1 6 0");
  EXPECT_EQ(render("{{ [1, 2, 1] | unique | list }} {{ ['a', 'A'] | unique | list }} {{ l | reverse | list }} {{ 'abc' | reverse }}", kCtx),
            "[1, 2] ['a'] [2, 1, 3] cba");
  EXPECT_EQ(render("{{ 'abc' | list }} {{ d | list }} {{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(by='value', reverse=true) }}", kCtx),
            "['a', 'b', 'c'] ['b', 'a'] [('b', 1), ('a', 2)] [('a', 2), ('b', 1)] [('a', 2), ('b', 1)]");
}

TEST(JinjaFilters, SelectRejectAndMap) {
  EXPECT_EQ(render("{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | join(',') }}", kCtx), "hi,bye");
  EXPECT_EQ(render("{{ msgs | rejectattr('role', 'eq', 'user') | list | length }} {{ msgs | selectattr('content') | list | length }}", kCtx),
            "1 3");
  EXPECT_EQ(render("{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ l | select('gt', 1) | list }} {{ [0, 1, '', 'a'] | select | list }}", kCtx),
            "[3, 1] [2] [3, 2] [1, 'a']");
  EXPECT_EQ(render("{{ l | map('string') | join('-') }} {{ msgs | map(attribute='role') | map('upper') | unique | list }}", kCtx),
            "3-1-2 ['USER', 'ASSISTANT']");
  EXPECT_EQ(render("{{ msgs | map(attribute='x', default='D') | list }} {{ [[1, 'a'], [2, 'b']] | map(attribute='1') | join }}", kCtx),
            "['D', 'D', 'D'] ab");
}

TEST(JinjaFilters, StringFilters) {
  EXPECT_EQ(render("[{{ '  trim me \n' | trim }}] [{{ 'xxhixx' | trim('x') }}] {{ 'abc' | upper }} {{ s | lower }}", kCtx),
            "[trim me] [hi] ABC hello world");
  EXPECT_EQ(render("{{ 'hello wORLD-foo' | title }} {{ 'hELLO' | capitalize }} {{ s | replace('l', 'L') }} {{ s | replace('l', 'L', 2) }}", kCtx),
            "Hello World-Foo Hello HeLLo WorLd HeLLo World");
  EXPECT_EQ(render("{{ 'a\\nb\\n\\nc' | indent(2) }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ 'a\\nb' | indent('> ') }}"),
            "a\n  b\n\n  c|  a\n  b|a\n  \n  b|a\n> b");
  EXPECT_EQ(render("{{ s | wordcount }} [{{ 'x' | center(5) }}] {{ 'Hello world this is long' | truncate(10) }} {{ 'a&<>\"\\'' | e }} {{ 'x' | safe }}", kCtx),
            "2 [  x  ] Hello... a&amp;&lt;&gt;&#34;&#39; x");
  EXPECT_EQ(render("{{ 'Hello %s' | format('x') }} {{ '%(a)s-%(b)d' | format(a='A', b=2) }}"), "Hello x A-2");
}

TEST(JinjaFilters, DefaultAndConversions) {
  EXPECT_EQ(render("{{ missing | default('dflt') }} [{{ e | default('dflt') }}] {{ e | default('dflt', true) }} {{ none | d('x') }}", kCtx),
            "dflt [] dflt None");
  EXPECT_EQ(render("{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '0x1A' | int(base=16) }} {{ ' 12 ' | int }}"),
            "42 4 0 7 3 26 12");
  EXPECT_EQ(render("{{ '3.5' | float }} {{ 3 | float }} {{ 'a' | float }} {{ 3.0 | string }} {{ true | string }} {{ none | string }}"),
            "3.5 3.0 0.0 3.0 True None");
  EXPECT_EQ(render("{{ -3 | abs }} {{ -2.5 | abs }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.1 | round(0, 'ceil') }} "
                   "{{ 3.14159 | round(3, 'floor') }} {{ 7 | round }}"),
            "3 2.5 2.57 2.0 4.0 3.0 3.141 7");
}

TEST(JinjaFilters, TojsonMatchesPythonJsonDumps) {
  EXPECT_EQ(render("{{ d | tojson }}", kCtx), R"({"b": 1, "a": 2})");  // insertion order, ", " and ": "
  EXPECT_EQ(render("{{ 'a\"b\\\\c\\n\\t/\xE4\xBD\xA0' | tojson }}"), "\"a\\\"b\\\\c\\n\\t/\xE4\xBD\xA0\"");  // no ASCII escaping
  EXPECT_EQ(render("{{ [1.0, 2, none, true, 1e20, -0.0] | tojson }}"), "[1.0, 2, null, true, 1e+20, -0.0]");
  EXPECT_EQ(render("{{ '\\u0001\\u007f' | tojson }}"), "\"\\u0001\x7f\"");
  EXPECT_EQ(render("{{ d | tojson(indent=2) }}", kCtx), "{\n  \"b\": 1,\n  \"a\": 2\n}");
  EXPECT_EQ(render("{{ {'a': [], 'b': {}, 'c': [1]} | tojson(indent=1) }}"), "{\n \"a\": [],\n \"b\": {},\n \"c\": [\n  1\n ]\n}");
  EXPECT_EQ(render("{{ d | tojson(sort_keys=true) }} {{ {'a': 1} | tojson(separators=(',', ':')) }} {{ '\xC3\xA9' | tojson(ensure_ascii=true) }}", kCtx),
            R"({"a": 2, "b": 1} {"a":1} "\u00e9")");
  EXPECT_EQ(render("{{ {1: 'x', none: 2} | tojson }}"), R"({"1": "x", "null": 2})");
  EXPECT_NE(render_error("{{ missing | tojson }}").find("Object of type Undefined is not JSON serializable"), std::string::npos);
}

TEST(JinjaMethods, StringMethods) {
  EXPECT_EQ(render("{{ s.split() }} {{ s.split('o') }} {{ s.split('o', 1) }} {{ s.rsplit('o', 1) }} {{ '  a  b '.split() }} {{ 'a,b,,c'.split(',') }}", kCtx),
            "['Hello', 'World'] ['Hell', ' W', 'rld'] ['Hell', ' World'] ['Hello W', 'rld'] ['a', 'b'] ['a', 'b', '', 'c']");
  EXPECT_EQ(render("{{ 'a b c'.rsplit(None, 1) }} {{ 'x</think>y'.split('</think>')[-1] }} {{ 'x'.split('</think>')[0] }}"),
            "['a b', 'c'] y x");
  EXPECT_EQ(render("[{{ '  x \\n'.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nA\\n'.lstrip('\\n') }}|{{ 'A\\n\\n'.rstrip() }}]"),
            "[x|hi|A\n|A]");
  EXPECT_EQ(render("{{ s.upper() }} {{ s.lower() }} {{ 'hello wORLD'.title() }} {{ 'hELLO wORLD'.capitalize() }}", kCtx),
            "HELLO WORLD hello world Hello World Hello world");
  EXPECT_EQ(render("{{ s.startswith('He') }} {{ s.endswith(('x', 'ld')) }} {{ 'abc'.startswith('b', 1) }} {{ s.endswith('x') }}", kCtx),
            "True True True False");
  EXPECT_EQ(render("{{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }} {{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('q') }} {{ s.count('l') }}", kCtx),
            "HeLLo WorLd HeLLo World 4 7 -1 3");
  EXPECT_EQ(render("{{ '\xE4\xBD\xA0\xE5\xA5\xBD\xE4\xB8\x96'.find('\xE4\xB8\x96') }} {{ '-'.join(['a', 'b']) }} {{ '123'.isdigit() }} "
                   "{{ 'abc'.isalpha() }} {{ 'Ab'.islower() }} {{ 'AB'.isupper() }}"),
            "2 a-b True True False True");
  EXPECT_EQ(render("{{ '{} and {}'.format(1, 'x') }} {{ '{0}{name}'.format('a', name='b') }} {{ '%s is %d' % ('Bob', 30) }} {{ '%.2f' % 3.14159 }}"),
            "1 and x ab Bob is 30 3.14");
}

TEST(JinjaMethods, DictAndListMethods) {
  EXPECT_EQ(render("{{ d.get('a') }} {{ d.get('q') }} {{ d.get('q', 'dflt') }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.items() | list }}", kCtx),
            "2 None dflt ['b', 'a'] [1, 2] [('b', 1), ('a', 2)]");
  EXPECT_EQ(render("{{ l.index(2) }} {{ l.count(1) }}", kCtx), "2 1");
}

TEST(JinjaMethods, MutatingMethodsAreRefusedByTheSandbox) {
  EXPECT_NE(render_error("{{ l.append(4) }}", kCtx).find("access to attribute 'append' of 'list' object is unsafe"),
            std::string::npos);
  EXPECT_NE(render_error("{{ d.update({}) }}", kCtx).find("access to attribute 'update' of 'dict' object is unsafe"),
            std::string::npos);
  EXPECT_NE(render_error("{{ s.nosuch() }}", kCtx).find("'str object' has no attribute 'nosuch'"), std::string::npos);
}
