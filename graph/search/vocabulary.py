"""Words code writes for what a question says in English: verb synonyms and the usual abbreviations.

A question says "Deletes the temporary directory"; the code says `remove_tmp_dir`. BM25
only meets words that are written the same, so each plain query word also matches the
other members of its group here. Two sets, each general programming vocabulary (none of
it taken from a benchmark project's names), switched on separately by
SearchConfig.vocabulary: "verbs" (what a function does: get/fetch/retrieve,
remove/delete, create/make/build, ...) and "abbreviations" (how code shortens a noun:
directory/dir, argument/arg, message/msg, ...).

A member ending in `*` is a prefix stem (`retriev*`: retrieve, retrieves, retrieval),
one without is an exact word (`dir`, `msg`: prefixes of these would match `direct`,
`msgfmt`). A query word belongs to a group when the word or one of its stems is an
exact member or starts with a prefix member.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["VOCABULARIES", "related_terms"]

_VERBS = """
get fetch* retriev* obtain*
remov* delet* del discard* drop*
creat* make* build* construct*
check* validat* verif* ensur*
add append* insert*
search* lookup locat*
start* begin* launch*
stop* halt* terminat*
convert* transform*
send* emit* transmit*
read* load*
writ* save* dump*
display* print* render*
initializ* initialis* init setup
copy copi* clon* dup duplicat*
clear* reset*
join* concat* merg* combin*
run* execut* invok*
enabl* activat*
disabl* deactivat*
"""

_ABBREVIATIONS = """
director* dir dirs
argument* arg args
parameter* param params
configur* config cfg conf
message* msg msgs
error* err errs
exception* exc
number* num
string* str
attribut* attr attrs
function* func fn
callback* cb
object* obj
value* val
buffer* buf
length* len
temporar* tmp temp
information* info
description* desc
request* req
respons* resp
current* cur
previous* prev
maxim* max
minim* min
environ* env
command* cmd
source* src
destination* dst dest
character* char chr
boolean* bool
integer* int
dictionar* dict
sequence* seq
iterat* iter
referenc* ref
position* pos
address* addr
allocat* alloc
memory mem
statistic* stat stats
utilit* util
context* ctx
variable* var
package* pkg
librar* lib
image* img
document* doc
identifier* id
socket* sock
connection* conn
password* passwd
pointer* ptr
column* col
signal* sig
descriptor* fd
authenticat* auth
application* app
database* db
header* hdr
"""


def _groups(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(line.split()) for line in text.strip().splitlines())


VOCABULARIES: dict[str, tuple[tuple[str, ...], ...]] = {
    "verbs": _groups(_VERBS),
    "abbreviations": _groups(_ABBREVIATIONS),
}


def _member_of(member: str, forms: Sequence[str]) -> bool:
    if member.endswith("*"):
        return any(form.startswith(member[:-1]) for form in forms)
    return member in forms


def related_terms(word: str, stems: Sequence[str], vocabularies: Sequence[str]) -> list[str]:
    """The other members of every group of the named vocabularies `word` (or a stem of it) belongs to."""
    forms = [word, *stems]
    out: list[str] = []
    for name in vocabularies:
        for group in VOCABULARIES[name]:
            if any(_member_of(member, forms) for member in group):
                out.extend(m for m in group if not _member_of(m, forms) and m not in out)
    return out
