"""codec: the two-way codec between LLM chat formats and structured tool calls.

Render OpenAI-style messages and tools into the exact prompt a model was trained on, and parse
the model's reply (whole or streamed) back into content, reasoning and tool calls.
"""

from codec.derive import DeriveError, derive
from codec.detect import Detection, PromptDifference, TemplateDetection, detect, detect_reply, detect_template
from codec.errors import CodecError, GrammarWarning, ParseError, RenderError, RenderWarning, ToolError, UnknownFormat
from codec.format import Format
from codec.formats import formats, get_format
from codec.models import (
    Conversation,
    Event,
    Function,
    FunctionCall,
    Issue,
    Message,
    ParseResult,
    ReasoningDelta,
    TextDelta,
    Tool,
    ToolCall,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
)
from codec.stream import Stream

__version__ = "0.1.0"

__all__ = [
    "CodecError",
    "Conversation",
    "DeriveError",
    "Detection",
    "Event",
    "Format",
    "Function",
    "FunctionCall",
    "GrammarWarning",
    "Issue",
    "Message",
    "ParseError",
    "ParseResult",
    "PromptDifference",
    "ReasoningDelta",
    "RenderError",
    "RenderWarning",
    "Stream",
    "TemplateDetection",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolError",
    "UnknownFormat",
    "__version__",
    "derive",
    "detect",
    "detect_reply",
    "detect_template",
    "formats",
    "get_format",
]
