"""Regular expressions for how users phrase results, exceptions, hangs and requests in bug reports."""

from __future__ import annotations

import builtins
import re

#: Prose markers for an inline span and a fenced block, put in place of them before phrase matching.
SPAN = "\x02{}\x03"
BLOCK = "\x00B{}\x00"
TOKEN = re.compile(r"\x02(?P<span>\d+)\x03|\x00B(?P<block>\d+)\x00")
SPAN_AT_END = re.compile(
    r"\x02(?P<n>\d+)\x03[ \t]*,?[ \t]*(?:(?:still|now|currently|actually|just|always|only|incorrectly|"
    r"wrongly|instead|also|then|it|simply|unexpectedly|sometimes|should|would|must|will|does|did|doesn't|"
    r"didn't|never|not|is|supposed|to)[ \t]+)*\Z",
    re.I,
)
FILLER = re.compile(
    r"(?:\s|[:=*_>]|->|\b(?:is|was|are|were|would\s+be|to\s+be|be|the|an?|output|result|value|values|answer|"
    r"return\s+value|of|here|just|simply|exactly|something\s+like|like|as|instead|back|me|us|rather)\b)*",
    re.I,
)
VERBS = (
    r"(?:print|return|output|give|be|equal|yield|produce|show|display|evaluate\s+to|get|see|contain|raise|"
    r"throw)"
)
SUBJECT_TO_VERB = re.compile(
    r"(?:\x02(?P<n>\d+)\x03|it|this|that|they|them|the\s+(?:call|function|code|result|output|script|program))"
    r"\s+(?:to\s+)?(?P<verb>" + VERBS + r")\b",
    re.I,
)
NEGATED_OR_HOPED = re.compile(
    r"\b(?:should|would|must|to|will|could|shall|might|may|expected|expect|want|wanted|supposed|"
    r"not|n't|never|cannot|can't|hoped|wish)\s+(?:have\s+)?(?:\w+ly\s+)?\Z",
    re.I,
)

#: A fenced block's marker alone.
BLOCK_TOKEN = re.compile(r"\x00B(?P<block>\d+)\x00")
#: How a sentence ends when it introduces the block after it: a colon, or "is"/"are"/"would be"/"like this".
LEAD_IN_END = re.compile(
    r"(?::|\b(?:is|are|be|was|were|becomes?|reads?|looks?\s+like|like\s+(?:this|so)|as\s+follows|following|"
    r"this|these|gives?|returns?|prints?|outputs?|shows?)\s*[*_]*)\s*\Z",
    re.I,
)
#: A verb right after a quoted call that says what it gives ("`f(x)` returns `3`", "`f(x)` should be `3`").
SUBJECT_VERB_AFTER = re.compile(
    r"[ \t]*,?[ \t]*(?:(?:should|would|must|to|will|ought\s+to|needs?\s+to)[ \t]+(?:still[ \t]+)?)?"
    r"(?:returns?|returning|gives?|giving|prints?|printing|outputs?|yields?|produces?|evaluates?[ \t]+to|equals?|"
    r"be|is|==|->|→|=>)(?=[\s\x02\x00:])",
    re.I,
)
#: Between two listed values: "`a`, `b` and `c`", "`a`; then `b`", "`a` and `b` respectively".
LIST_SEPARATOR = re.compile(r"[ \t]*(?:,|;)?[ \t]*(?:\b(?:and|then|or)\b)?[ \t]*(?=\x02)", re.I)
#: A heading with no colon ("**Actual output**") still labels the fenced block on the next line.
BLOCK_NEXT = r"(?=[ \t]*\n[ \t]*\x00B)"
#: ... and the bulleted list that starts on the next line (or after one blank line).
BULLET_NEXT = r"(?=[ \t]*\n(?:[ \t]*\n)?[ \t]*(?:[-*+•]|\d{1,2}[.)])[ \t])"
#: "Expected:" / "**Actual output:**" at the start of a line: whatever follows on the line is the value.
EXPECTED_LABEL = re.compile(
    r"(?:^|\n)[ \t*_#>-]*(?:expected|desired|correct|wanted)(?:[ \t]+(?:output|result|value|answer|"
    r"behaviou?r|return(?:[ \t]+value)?|outcome|values|results|outputs))?[ \t]*[*_]*[ \t]*(?::|=|->|"
    + BLOCK_NEXT
    + "|"
    + BULLET_NEXT
    + r")[ \t]*[*_]*",
    re.I,
)
ACTUAL_LABEL = re.compile(
    r"(?:^|\n)[ \t*_#>-]*(?:actual(?:ly)?|observed|current|got|output|result|returns?|prints?|outcome)"
    r"(?:[ \t]+(?:output|result|value|answer|behaviou?r|return(?:[ \t]+value)?|outcome))?[ \t]*[*_]*[ \t]*"
    r"(?::|=|->|" + BLOCK_NEXT + r")[ \t]*[*_]*",
    re.I,
)
#: Free text after a label that describes behaviour rather than quoting a value.
NOT_A_VALUE = re.compile(
    r"\b(?:it|this|that|should|would|returns?|raises?|throws?|hangs?|never|crash\w*|error|exception|nothing|"
    r"fails?|same|see|below|above|works?|correct(?:ly)?|wrong|no\s+output)\b",
    re.I,
)
EXPECTED_TRIGGERS = [
    re.compile(r"(?<![\w-])expect(?:ed|ing|s)?\b", re.I),
    re.compile(
        r"\b(?:should|ought\s+to|supposed\s+to|needs?\s+to|must|has\s+to)\s+(?:have\s+)?(?:really\s+)?(?P<verb>"
        r"be(?:en)?|return(?:ed)?|print(?:ed)?|output(?:ted)?|give(?:n)?|gave|yield(?:ed)?|produce(?:d)?|"
        r"evaluate(?:d)?\s+to|equal(?:ed)?|show(?:n)?|display(?:ed)?|contain(?:ed)?|raise(?:d)?|throw(?:n)?)\b",
        re.I,
    ),
    re.compile(
        r"\b(?:instead\s+of|rather\s+than)\s*(?:the\s+expected\s+|the\s+correct\s+)?(?:(?P<verb>giving|"
        r"returning|printing|"
        r"producing|outputting|yielding|getting|being|raising|throwing|showing)\b)?",
        re.I,
    ),
    re.compile(
        r"\b(?:correct|right|proper|desired|intended|true)\s+(?:output|result|value|answer|return\s+value|"
        r"behaviou?r)\b(?:\s+(?:is|would\s+be|should\s+be))?",
        re.I,
    ),
    re.compile(r"\bwant(?:ed)?\s+(?:it\s+)?to\s+(?P<verb>return|be|print|give|get|see|raise)\b", re.I),
]
ACTUAL_TRIGGERS = [
    re.compile(
        r"\b(?:actual(?:ly)?|observed|current)\s*(?:output|result|value|answer|behaviou?r|return\s+value|"
        r"outcome)?\s*[*_]*\s*(?::|=|->|\bis\b|\bwas\b)",
        re.I,
    ),
    re.compile(
        r"\b(?:i|we|you)\s*(?:'m|am|are|'re|keep|do)?\s*(?:got|get|gets|getting|see|saw|seeing|receive[ds]?|"
        r"receiving)\b",
        re.I,
    ),
    re.compile(r"\b(?:but|and|instead)\s*,?\s*(?:it\s+|this\s+)?(?:got|gets|get)\b", re.I),
    re.compile(r"(?<![\w'])got\b", re.I),
    re.compile(
        r"\b(?:returns|returned|gives|gave|prints|printed|outputs|outputted|yields|yielded|produces|produced|"
        r"evaluates\s+to|evaluated\s+to|results\s+in|resulted\s+in|shows|showed|displays|displayed|comes\s+out\s+as|"
        r"comes\s+back\s+as|came\s+back\s+as)\b",
        re.I,
    ),
    re.compile(r"(?<=\x03)\s*(?:is|was|equals|becomes|became|ends\s+up\s+(?:as|being)|==)\s", re.I),
    re.compile(r"(?<=\x03)\s*(?:→|->|=>|==>|⇒)\s*", re.I),
    re.compile(r"\b(?:the\s+)?(?:output|result|return\s+value|answer)\s+(?:is|was)\b", re.I),
    re.compile(r"\b(?:but|and|yet|however|whereas)\s*,?\s*(?:it|this|that|the\s+\w+)\s+(?:is|was)\b", re.I),
]
EXC_TRIGGER = re.compile(
    r"\b(?:raises|raised|raising|raise|throws|threw|thrown|throwing|throw|crash(?:es|ed|ing)?|fails?|failed|failing|"
    r"errors?\s+out|dies|died|blows\s+up|blew\s+up|get|gets|got|getting|see|saw|hits?|produces|results\s+in|"
    r"ends\s+with|ending\s+with|with)\b(?:\s+(?:with|an?|the|its|their|own|proper|me|out|into|in|this|following|same))*\s*",
    re.I,
)
EXC_WORD = re.compile(r"\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning|Iteration|Fault)\b")
EXC_TEXT = re.compile(r"^\s*(?P<type>(?:[A-Za-z_]\w*\.)*(?P<last>[A-Za-z_]\w*))\s*(?::\s*(?P<msg>.*?))?\s*$", re.S)
BUILTIN_EXCS = frozenset(
    n
    for n in dir(builtins)
    if isinstance(getattr(builtins, n), type) and issubclass(getattr(builtins, n), BaseException)
)
HANG = re.compile(
    r"\bnever\s+(?:returns?|terminates?|finish(?:es)?|completes?|ends|halts?|stops?|comes\s+back|exits?)\b|"
    r"\bhang(?:s|ing|ed)?\b|\bhung\b|\binfinite(?:ly)?\s+(?:loop|recursion\s+without)|\bloops?\s+(?:forever|endlessly)|"
    r"\bruns?\s+forever\b|\brunning\s+forever\b|\btim(?:es|ed|ing)\s+out\b|\btakes\s+forever\b|\bfreez(?:es|ing)\b|"
    r"\b(?:does\s+not|doesn't|did\s+not|didn't|won't|will\s+not|never)\s+(?:return|terminate|finish|complete|halt|"
    r"stop|exit|end)\b|\bgets?\s+stuck\b|\bstuck\s+(?:in|forever)\b|\bspins\s+forever\b|\bhad\s+to\s+kill\b|"
    r"\bhad\s+to\s+(?:press\s+)?ctrl[- +]?c\b",
    re.I,
)
FEATURE = re.compile(
    r"\bfeature\s+request\b|\b(?:it\s+)?would\s+be\s+(?:nice|great|good|useful|helpful|cool)\b|\bplease\s+add\b|"
    r"\badd\s+(?:support|an?\s+option|a\s+way|the\s+ability)\b|\bsupport\s+for\b|\bcould\s+you\s+(?:add|support|implement)|"
    r"\benhancement\b|\bproposal\b|\bsuggestion\b|\bi\s+(?:propose|suggest)\b|\bnew\s+feature\b|\bnice\s+to\s+have\b|"
    r"\brequest(?:ing)?\s+(?:a|an|the)\s+\w+|\bcan\s+we\s+(?:add|have|get)\b|\bwishlist\b",
    re.I,
)
QUESTION = re.compile(
    r"\bhow\s+(?:do|can|should|would)\s+(?:i|we|you|one)\b|\bhow\s+to\b|\bis\s+(?:it|there)\s+(?:possible|a\s+way)\b|"
    r"^\s*question\b|\bwhat\s+(?:is|are|does)\s+the\s+(?:best|right|recommended)\b|\bany\s+(?:idea|advice|tips?)\b|"
    r"\bcan\s+(?:someone|anyone)\s+explain\b|\bwhy\s+does\b|\bdoes\s+\S+\s+support\b",
    re.I,
)
BUG = re.compile(
    r"\bbug\b|\berror\b|\bcrash|\bwrong\b|\bincorrect\b|\bunexpected\b|\bbroken\b|\bfails?\b|\bfailed\b|\bregression\b|"
    r"\bexception\b|\bdoesn't\s+work|\bdoes\s+not\s+work|\bexpected\b|\binstead\s+of\b|\bactual\b|\bgot\b",
    re.I,
)
TRAILER = re.compile(
    r"\s+(?:on|for|in|with|when|from|at|now|here|there|again|too|if|since|after|before|every|each|whenever|"
    r"under|using|via|locally|today|sometimes|always)\b",
    re.I,
)
STOP_VALUES = frozenset({"nothing", "error", "exception", "something", "it", "this", "that", "none", "wrong", "ok"})
