"""Every label of the console in English and Chinese, and which language a request gets.

Labels are the console's own words: headings, column names, buttons, verdicts. The round
page's report is ``thirteen explain``'s (``service.report.html``): its labels are that
report's English (``ENGLISH_LABELS``) or their Chinese here (``REPORT_ZH``). Sentences that
come from the record (the comparisons the reveal recorded, the audit's findings, the dispute
report's phrases) are shown as recorded, in English, under Chinese labels; pile and hand
category names get their Chinese name beside them (the rule book's glossary and R2.1).
"""

from __future__ import annotations

from collections.abc import Mapping

from service.report.html_labels import CATEGORIES_ZH, CATEGORY_OF_WORDS, ENGLISH, pile_words

LANGUAGES = ("en", "zh")
DEFAULT = "en"
COOKIE = "lang"

LABELS: dict[str, tuple[str, str]] = {
    # the frame
    "console": ("Dispute console", "争议处理台"),
    "language": ("Language", "语言"),
    "search": ("Search", "查询"),
    "read_only": (
        "Read only: this console changes nothing.",
        "只读：本控制台不做任何修改。",
    ),
    "record_in_english": (
        "Sentences from the record are shown as recorded, in English.",
        "记录中的句子按原文（英文）显示。",
    ),
    # search
    "search_title": ("Find a round, a player or a table", "查找牌局、玩家或牌桌"),
    "round_id": ("Round id", "牌局编号"),
    "player_id": ("Player id", "玩家编号"),
    "table_id": ("Table id", "牌桌编号"),
    "open_round": ("Open the round", "打开牌局"),
    "open_player": ("Player's rounds", "玩家牌局记录"),
    "open_table": ("Table's rounds", "牌桌牌局记录"),
    "search_one": (
        "Give one id: a round, a player or a table.",
        "请只填写一个编号：牌局、玩家或牌桌。",
    ),
    # lists
    "player_title": ("Player {id}", "玩家 {id}"),
    "recall": (
        "Game recall: rounds that are over, newest first",
        "游戏回溯：已结束的牌局，最新在前",
    ),
    "table_title": ("Table {id}", "牌桌 {id}"),
    "table_rounds": ("Rounds that are over, in the order played", "已结束的牌局，按进行顺序"),
    "balance_now": ("Balance now", "当前余额"),
    "seated_at": ("seated at table", "就座于牌桌"),
    "in_round": ("in round", "正在牌局"),
    "balance_needs": (
        "(the balance needs one of the roles {roles})",
        "（查看余额需要以下角色之一：{roles}）",
    ),
    "no_rounds": ("No round that is over.", "没有已结束的牌局。"),
    "older": ("Next page", "下一页"),
    "first_page": ("First page", "第一页"),
    "ended": ("Ended", "结束时间"),
    "dealt": ("Dealt", "发牌时间"),
    "round": ("Round", "牌局"),
    "table": ("Table", "牌桌"),
    "number": ("No.", "局数"),
    "seat": ("Seat", "座位"),
    "outcome": ("Outcome", "结果"),
    "play": ("Played", "出牌"),
    "points": ("Points", "墩数"),
    "coins": ("Coins", "游戏币"),
    "balance_before": ("Balance before", "之前余额"),
    "balance_after": ("Balance after", "之后余额"),
    "base": ("Base", "底注"),
    "players": ("Players", "玩家"),
    "revealed": ("revealed", "已比牌"),
    "abandoned": ("abandoned (R11.3)", "未比牌结束 (R11.3)"),
    "escaped": ("escaped (R11)", "逃跑 (R11)"),
    "foul": ("foul", "相公"),
    # the round
    "round_title": ("Round {id}", "牌局 {id}"),
    "round_of_table": ("round {number} of table", "牌桌第 {number} 局，牌桌"),
    "base_per_point": ("base {base} coins per point", "底注 每墩 {base} 游戏币"),
    "ruleset": ("ruleset", "规则"),
    "export": ("Download the export (JSON)", "下载导出文件 (JSON)"),
    "export_hint": (
        "Check it offline: thirteen audit --file FILE --log-public-key KEY",
        "离线核查：thirteen audit --file 文件 --log-public-key 公钥",
    ),
    "verdict": ("Audit verdict", "审计结论"),
    "passes": ("passes: every check agrees", "通过：所有检查一致"),
    "fails": ("FAILS: see the findings marked FAIL", "未通过：见标记为 FAIL 的检查项"),
    "checked_by": (
        "The service re-derived the round from its events (AuditRound).",
        "服务根据事件重新推导了本局 (AuditRound)。",
    ),
    "checks_ok": ("{count} checks agree (show them)", "{count} 项检查一致（展开）"),
    "rule": ("Rule", "规则"),
    "check": ("Check", "检查"),
    "event": ("Event", "事件"),
    # errors
    "error_400": ("Bad request", "请求有误"),
    "error_403": ("Not allowed", "无权访问"),
    "error_404": ("Not found", "未找到"),
    "error_405": ("Method not allowed", "不允许的请求方法"),
    "error_409": ("Not over yet", "尚未结束"),
    "error_421": ("Wrong host", "主机名不符"),
    "error_500": ("Console error", "控制台错误"),
    "error_501": ("Not offered by this service", "该服务不提供此功能"),
    "error_502": ("Unexpected answer from the service", "服务返回异常"),
    "error_503": ("The service is unavailable", "服务不可用"),
    "error_504": ("The service did not answer in time", "服务未及时响应"),
    "missing_role": (
        "The console's certificate lacks the role {role} (allowed: {roles}).",
        "控制台所用证书缺少角色 {role}（允许的角色：{roles}）。",
    ),
    "back_to_search": ("Back to the search", "返回查询"),
    "read_only_405": (
        "The console is read-only: it answers GET and HEAD only.",
        "本控制台只读：只接受 GET 和 HEAD 请求。",
    ),
    "no_such_page": ("There is no such page.", "没有这个页面。"),
}

REPORT_ZH: dict[str, str] = {
    # a player's box
    "escaped_badge": "逃跑 (R11)",
    "foul_badge": "相公",
    "n_points": "{n} 墩",
    "n_coins": "{n} 游戏币",
    "seat_at_deal": "座位 {seat} · 发牌时 {coins} 游戏币",
    "hand_label": "手牌",
    "hidden": "牌局结束前不显示手牌",
    "dealt_label": "发牌",
    "special_hand": "特殊牌型 {id}（{chinese}），{points} 墩，申报 {declared}",
    "foul_reason": "相公：{reason}",
    "escaped_reason": "在发牌后、比牌前离开 (R11)",
    "players_heading": "玩家",
    "players_heading_over": "玩家手牌：前墩 | 中墩 | 后墩",
    # the comparisons
    "comparisons": "比牌 (R6)",
    "even": "平",
    "vs": "{a} 对 {b}",
    "pile": "墩",
    "for_a": "{a} 得分",
    # the coins
    "coins_heading": "墩数与游戏币 (R7, R9)",
    "coins_how": "应得 = 墩数 × 底注 {base}；按发牌时的余额结算：输家最多付出其余额 (R9.1)。",
    "col_player": "玩家",
    "col_points": "墩数",
    "col_gross": "应得（封顶前）",
    "col_at_deal": "发牌时余额",
    "col_settled": "实得（封顶后）",
    "col_escape": "逃跑",
    "col_after": "之后余额",
    # the fairness proof
    "proof": "公平性证明 (R12)",
    "commitment": "发牌前公布的承诺",
    "client_seed": "客户端种子，牌局编号",
    "player_seeds": "玩家种子，各自来自玩家设备 (R12.8)",
    "effective_seed": "发牌实际使用的客户端种子：混入玩家种子后的客户端种子 (R12.8)",
    "server_seed": "服务器种子",
    "server_seed_revealed": "公布的服务器种子",
    "not_revealed": "尚未公布：牌局结束时公布 (R12.6)",
    "seed_matches": "SHA-256(服务器种子) 等于承诺",
    "deal_matches": "由种子重新计算的发牌与记录的手牌一致",
    "deal_matches_seeds": "由种子和玩家种子重新计算的发牌与记录的手牌一致",
    "verified": "已验证",
    "not_verified": "不一致",
    "callers": "调用者（每个事件记录的身份）",
    # R14: the horse card, the cards dealt to no one, many pairs
    "horse_badge": "马牌",
    "horse_holder": "持有马牌 {card}：其每一对比牌 ×{factor} (R14.1)",
    "horse_card_title": "{card}，马牌 (R14.1)",
    "undealt": "未发出的牌 (R14.2.4)",
    "undealt_how": "{deck} 张牌中有 {n} 张未发给任何人；与手牌一同公布。",
    "glance": "比牌一览：行中玩家所得墩数 (R6, R14.2.6)",
}
"""The Chinese of the dispute report's labels (``service.report.html_labels.ENGLISH_LABELS``):
plain words, no markup, as the report's English."""

PILES_ZH = {"front": "前墩", "middle": "中墩", "back": "后墩"}
"""The rule book's glossary (docs/rules.md): 墩 pile."""


class Words:
    """The labels of one language: ``words("round_title", id=...)``; also the dispute report's
    (``service.report.html_labels.Labels``), English as ``thirteen explain`` words them.

    >>> Words("en")("n_points", n="+4"), Words("zh")("n_points", n="+4")
    ('+4 pts', '+4 墩')

    Every report label has its Chinese, no console label shadows one, and none holds markup
    (the report escapes a label's values, not the label):

    >>> from service.report.html_labels import ENGLISH_LABELS
    >>> set(REPORT_ZH) == set(ENGLISH_LABELS), set(LABELS) & set(ENGLISH_LABELS)
    (True, set())
    >>> [v for v in (*ENGLISH_LABELS.values(), *REPORT_ZH.values()) if set(v) & set('<>&"')]
    []
    """

    def __init__(self, lang: str) -> None:
        self.lang = lang if lang in LANGUAGES else DEFAULT
        self._index = LANGUAGES.index(self.lang)

    def __call__(self, key: str, /, **values: object) -> str:
        if key in LABELS:
            return LABELS[key][self._index].format(**values)
        if self.zh:
            return REPORT_ZH[key].format(**values)
        return ENGLISH(key, **values)

    @property
    def zh(self) -> bool:
        return self.lang == "zh"

    def pile(self, name: str) -> str:
        """``front``, or ``前墩 front`` in Chinese."""
        return f"{PILES_ZH[name]} {name}" if self.zh and name in PILES_ZH else name

    def hand_words(self, words: str) -> str:
        """A pile in the record's words (``flush, A-high``), its category named in Chinese
        first when the page is Chinese: ``同花 flush, A-high``.

        >>> Words("zh").hand_words("full house, 9s over 5s"), Words("en").hand_words("pair, Qs")
        ('葫芦 full house, 9s over 5s', 'pair, Qs')
        """
        category = CATEGORY_OF_WORDS.get(words.split(",", 1)[0])
        if not self.zh or category is None:
            return pile_words(words)
        return f"{CATEGORIES_ZH[category]} {words}"


def choose(query: Mapping[str, str], cookies: Mapping[str, str], accept: str) -> str:
    """The page's language: ``?lang=`` first, then the cookie the switch set, then the
    browser's Accept-Language (Chinese when it prefers any ``zh``), else English.

    >>> choose({"lang": "zh"}, {}, ""), choose({}, {"lang": "zh"}, ""), choose({}, {}, "zh-CN")
    ('zh', 'zh', 'zh')
    >>> choose({"lang": "fr"}, {}, "en-GB,zh;q=0.5")
    'en'
    """
    for given in (query.get("lang", ""), cookies.get(COOKIE, "")):
        if given in LANGUAGES:
            return given
    first = accept.split(",", 1)[0].strip().lower()
    return "zh" if first.startswith("zh") else DEFAULT
