//! Every script end to end, at default settings: near-duplicates in scripts written without
//! spaces (Thai, Lao, Khmer, Myanmar) are found as in English, a megabyte of unspaced Thai
//! included; the summary names each document's script; an index built with the older
//! tokenisation is refused.

use std::collections::HashMap;

use crate::common::*;
use corpus_dedup::synth::Rng;

/// Real sentences, one text per script (Khmer with U+200B between words, as on the web).
const SENTENCES: [(&str, &str); 5] = [
    (
        "th",
        "ภาษาไทยเป็นภาษาราชการของประเทศไทย คนไทยส่วนใหญ่พูดภาษาไทยเป็นภาษาแม่ กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทยและเป็นเมืองที่ใหญ่ที่สุด แม่น้ำเจ้าพระยาไหลผ่านกรุงเทพมหานครลงสู่อ่าวไทย",
    ),
    (
        "lo",
        "ນະຄອນຫຼວງວຽງຈັນເປັນເມືອງຫຼວງຂອງປະເທດລາວ ແມ່ນ້ຳຂອງໄຫຼຜ່ານປະເທດລາວຈາກທິດເໜືອຫາທິດໃຕ້ ປະຊາຊົນລາວສ່ວນຫຼາຍເວົ້າພາສາລາວ ປະເທດລາວມີຊາຍແດນຕິດກັບປະເທດໄທ ຫວຽດນາມ ກຳປູເຈຍ ຈີນ ແລະ ມຽນມາ",
    ),
    (
        "km",
        "ភាសាខ្មែរ\u{200B}គឺជា\u{200B}ភាសា\u{200B}ផ្លូវការ\u{200B}របស់\u{200B}ប្រទេស\u{200B}កម្ពុជា\u{200B} ប្រជាជន\u{200B}កម្ពុជា\u{200B}ភាគច្រើន\u{200B}និយាយ\u{200B}ភាសាខ្មែរ\u{200B}ជា\u{200B}ភាសា\u{200B}កំណើត\u{200B} រាជធានី\u{200B}ភ្នំពេញ\u{200B}គឺជា\u{200B}ទីក្រុង\u{200B}ធំជាងគេ\u{200B}បំផុត\u{200B}របស់\u{200B}ប្រទេស\u{200B}កម្ពុជា",
    ),
    (
        "my",
        "မြန်မာနိုင်ငံသည် အရှေ့တောင်အာရှတွင် တည်ရှိသော နိုင်ငံတစ်နိုင်ငံ ဖြစ်သည်။ ရန်ကုန်မြို့သည် နိုင်ငံ၏ အကြီးဆုံးမြို့ ဖြစ်သည်။ မန္တလေးမြို့သည် ဒုတိယအကြီးဆုံးမြို့ ဖြစ်သည်။",
    ),
    (
        "en",
        "The Mekong river flows through six countries, from the Tibetan Plateau to the South China Sea, and feeds millions of people along its banks every year.",
    ),
];

/// `text` with the character at about 3/4 of its length replaced by the one before it.
fn one_char_edit(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let k = chars.len() * 3 / 4;
    let mut out = chars.clone();
    out[k] = chars[k - 1];
    out.into_iter().collect()
}

#[test]
fn spaceless_scripts_are_deduplicated_by_default_and_named_in_the_summary() {
    let dir = temp_dir("scripts");
    let mut texts = Vec::new();
    for (_, text) in SENTENCES {
        texts.push(text.to_string());
        texts.push(one_char_edit(text));
    }
    // Khmer with its zero-width spaces stripped (as some sites do) has the same tokens.
    texts.push(SENTENCES[2].1.replace('\u{200B}', ""));
    let glob = text_shard(&dir, &texts);
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    let rows = manifest(&out);
    let cluster: HashMap<&str, Option<u64>> =
        rows.iter().map(|r| (r.id.as_str(), r.cluster_id)).collect();
    // The four spaceless scripts (the English edit changes a whole word of a short text).
    for (i, (lang, _)) in SENTENCES[..4].iter().enumerate() {
        let (a, b) = (format!("d{}", 2 * i), format!("d{}", 2 * i + 1));
        assert!(cluster[a.as_str()].is_some(), "{lang}: not deduplicated");
        assert_eq!(cluster[a.as_str()], cluster[b.as_str()], "{lang}");
    }
    assert_eq!(
        cluster["d10"], cluster["d4"],
        "Khmer without its zero-width spaces"
    );
    // One cluster per script: nothing merged across them.
    let mut ids: Vec<u64> = rows.iter().filter_map(|r| r.cluster_id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4);

    let by_script = &summary(&out)["breakdown"]["by_script"];
    for (name, docs) in [
        ("Thai", 2),
        ("Lao", 2),
        ("Khmer", 3),
        ("Myanmar", 2),
        ("Latin", 2),
    ] {
        assert_eq!(by_script[name]["documents"], docs, "{name}: {by_script}");
    }
}

/// About `bytes` of unspaced Thai: words of real Thai drawn at random, no space anywhere.
fn unspaced_thai(rng: &mut Rng, bytes: usize) -> String {
    const WORDS: [&str; 24] = [
        "ภาษา",
        "ไทย",
        "เป็น",
        "ที่",
        "ไม่",
        "มี",
        "การ",
        "ระหว่าง",
        "คำ",
        "ประเทศ",
        "กรุงเทพ",
        "ร้าน",
        "กาแฟ",
        "อาหาร",
        "วันนี้",
        "อากาศ",
        "ดี",
        "มาก",
        "เมือง",
        "หลวง",
        "คน",
        "พูด",
        "แม่",
        "น้ำ",
    ];
    let mut s = String::with_capacity(bytes + 32);
    while s.len() < bytes {
        s.push_str(WORDS[rng.below(WORDS.len())]);
    }
    s
}

#[test]
fn megabyte_thai_documents_differing_by_one_character_are_one_cluster() {
    let dir = temp_dir("scripts-mb");
    let mut rng = Rng::new(41);
    let a = unspaced_thai(&mut rng, 1 << 20);
    let other = unspaced_thai(&mut rng, 1 << 20);
    let texts = vec![a.clone(), format!("{a}ก"), one_char_edit(&a), other];
    let glob = text_shard(&dir, &texts);
    let out = dir.join("out");
    run_ok(&glob, &out, &[]);
    let rows = manifest(&out);
    assert!(rows[0].cluster_id.is_some());
    assert_eq!(
        rows[1].cluster_id, rows[0].cluster_id,
        "one character appended"
    );
    assert_eq!(
        rows[2].cluster_id, rows[0].cluster_id,
        "one character changed"
    );
    assert_eq!(
        rows[3].cluster_id, None,
        "other Thai text of the same words"
    );
}

#[test]
fn an_index_of_the_older_tokenisation_is_refused_with_what_to_do() {
    let dir = temp_dir("scripts-index");
    let texts: Vec<String> = SENTENCES.iter().map(|(_, t)| t.to_string()).collect();
    let glob = text_shard(&dir, &texts);
    let index = dir.join("index");
    let night = |batch: &str| {
        run_cmd(&glob, &dir.join(batch), &[])
            .arg("--index")
            .arg(&index)
            .args(["--batch", batch])
    };
    night("n1").ok();
    // What an index of the older corpus-dedup holds: no record of the tokenisation.
    let head = index.join("index.json");
    let mut h: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&head).unwrap()).unwrap();
    assert!(h["settings"]["segmentation"].is_number(), "{h}");
    h["settings"]
        .as_object_mut()
        .unwrap()
        .remove("segmentation");
    std::fs::write(&head, serde_json::to_string(&h).unwrap()).unwrap();
    let before = std::fs::read(&head).unwrap();
    let err = night("n2").fails();
    assert!(err.contains("older tokenisation (segmentation 1"), "{err}");
    assert!(err.contains("Start a new index"), "{err}");
    assert_eq!(std::fs::read(&head).unwrap(), before);
}
