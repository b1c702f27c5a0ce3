"""Writes names_numbers.tsv: 160 sentences of our own (templates, names and places written for this set),
each with the names, places, numbers and clock times its translation must keep; and names_numbers_de.tsv, the
same templates in German, for a model that reads German. Deterministic.

None of the names is in transformer/training/augment.py's NAMES, so the score measures copying unseen
names, not recalling trained ones; the places are ones German writes the same way as English.
    python tests/data/make_names_numbers.py
"""
import random
from pathlib import Path

PEOPLE = ("Greta Dmitri Kofi Ngozi Sigrun Tiago Oksana Rashid Ebru Mateo Liesel Hiroshi Anneke Kwame Svetlana "
          "Bogdan Yuki Amina Lorenzo Ilse Pavel Chinwe Joost Marisol Tenzin Aroha Nilufar Dagny Emre Wiremu "
          "Beatriz Radek Keiko Oluwaseun Margit Esteban Nkechi Vesna Kaito Solveig Ignacio Zofia Babajide Ragnar "
          "Parisa Anselm Lwazi Mirela Tobiah Yevgenia").split()
PLACES = ("Accra Nairobi Valparaíso Tromsø Ljubljana Ouagadougou Winnipeg Chennai Brisbane Montevideo Plovdiv "
          "Kuching Bergamo Cebu Arequipa Tartu Sarajevo Kumasi Hobart Salzburg Tamale Pokhara Dunedin Fremantle "
          "Kisumu Bulawayo Trondheim Maribor Iquitos Sibiu").split()
TEMPLATES = [
    ("My name is {P}.", "P"), ("{P} is my neighbour.", "P"), ("I visited {P} in {C} last summer.", "P C"),
    ("We moved to {C} in {Y}.", "C Y"), ("My grandfather is {N2} years old.", "N2"),
    ("The concert costs {N2} euros.", "N2"), ("The train leaves at {T}.", "T"),
    ("{P} was born in {Y}.", "P Y"), ("{P} and {P2} are getting married in {C}.", "P P2 C"),
    ("I have {N1} brothers and {P} is the oldest.", "N1 P"), ("The room number is {N3}.", "N3"),
    ("{P} lives in {C} with her two cats.", "P C"), ("Call {P} before {T}, please.", "P T"),
    ("Our flight to {C} was {N2} minutes late.", "C N2"), ("This book has {N3} pages.", "N3"),
    ("{P} paid {N4} dollars for the old car.", "P N4"), ("Is {P} coming to the party tonight?", "P"),
    ("I have never been to {C}.", "C"), ("The museum in {C} opened in {Y}.", "C Y"),
    ("{P} runs {N2} kilometres every week.", "P N2"), ("We waited for {P} until {T}.", "P T"),
    ("There are {N2} students in my class.", "N2"), ("Does {P} speak German?", "P"),
    ("My sister met {P} at the station in {C}.", "P C"), ("The bridge is {N3} metres long.", "N3"),
    ("{P} wrote me a letter from {C}.", "P C"), ("The shop closes at {T} on Saturdays.", "T"),
    ("I bought {N2} apples for {P}.", "N2 P"), ("{P} has worked here since {Y}.", "P Y"),
    ("The bus to {C} leaves from platform {N1}.", "C N1"), ("Why didn't {P} call me?", "P"),
    ("Our house was built in {Y}.", "Y"), ("{P} is {N2} years old today.", "P N2"),
    ("My phone costs {N3} euros.", "N3"), ("{P} teaches music in {C}.", "P C"),
    ("The meeting starts at {T}.", "T"), ("I will see {P} in {C} next week.", "P C"),
    ("The village has {N4} inhabitants.", "N4"), ("{P} told me that {P2} was ill.", "P P2"),
    ("She drove {N3} kilometres to see {P}.", "N3 P"),
]
TEMPLATES_DE = [  # TEMPLATES in German, one for one
    ("Ich heiße {P}.", "P"), ("{P} ist meine Nachbarin.", "P"), ("Ich habe letzten Sommer {P} in {C} besucht.", "P C"),
    ("Wir sind {Y} nach {C} gezogen.", "C Y"), ("Mein Großvater ist {N2} Jahre alt.", "N2"),
    ("Das Konzert kostet {N2} Euro.", "N2"), ("Der Zug fährt um {T} ab.", "T"),
    ("{P} wurde {Y} geboren.", "P Y"), ("{P} und {P2} heiraten in {C}.", "P P2 C"),
    ("Ich habe {N1} Brüder und {P} ist der älteste.", "N1 P"), ("Die Zimmernummer ist {N3}.", "N3"),
    ("{P} wohnt mit ihren zwei Katzen in {C}.", "P C"), ("Ruf bitte vor {T} {P} an.", "P T"),
    ("Unser Flug nach {C} hatte {N2} Minuten Verspätung.", "C N2"), ("Dieses Buch hat {N3} Seiten.", "N3"),
    ("{P} hat {N4} Dollar für das alte Auto bezahlt.", "P N4"), ("Kommt {P} heute Abend zur Party?", "P"),
    ("Ich war noch nie in {C}.", "C"), ("Das Museum in {C} wurde {Y} eröffnet.", "C Y"),
    ("{P} läuft jede Woche {N2} Kilometer.", "P N2"), ("Wir haben bis {T} auf {P} gewartet.", "P T"),
    ("In meiner Klasse sind {N2} Schüler.", "N2"), ("Spricht {P} Deutsch?", "P"),
    ("Meine Schwester hat {P} am Bahnhof in {C} getroffen.", "P C"), ("Die Brücke ist {N3} Meter lang.", "N3"),
    ("{P} hat mir einen Brief aus {C} geschrieben.", "P C"), ("Der Laden schließt samstags um {T}.", "T"),
    ("Ich habe {N2} Äpfel für {P} gekauft.", "N2 P"), ("{P} arbeitet seit {Y} hier.", "P Y"),
    ("Der Bus nach {C} fährt von Gleis {N1} ab.", "C N1"), ("Warum hat {P} mich nicht angerufen?", "P"),
    ("Unser Haus wurde {Y} gebaut.", "Y"), ("{P} wird heute {N2} Jahre alt.", "P N2"),
    ("Mein Handy kostet {N3} Euro.", "N3"), ("{P} unterrichtet Musik in {C}.", "P C"),
    ("Das Treffen beginnt um {T}.", "T"), ("Ich sehe {P} nächste Woche in {C}.", "P C"),
    ("Das Dorf hat {N4} Einwohner.", "N4"), ("{P} hat mir erzählt, dass {P2} krank war.", "P P2"),
    ("Sie ist {N3} Kilometer gefahren, um {P} zu sehen.", "N3 P"),
]


def rows(n: int = 160, seed: int = 18, templates: list[tuple[str, str]] = TEMPLATES) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        for template, keys in templates[: n - len(out)]:
            values = {"P": rng.choice(PEOPLE), "C": rng.choice(PLACES), "Y": str(rng.randint(1901, 2029)),
                      "T": f"{rng.randint(1, 12)}:{rng.choice(range(0, 60, 5)):02d}", "N1": str(rng.randint(2, 9)),
                      "N2": str(rng.randint(10, 99)), "N3": str(rng.randint(100, 999)),
                      "N4": str(rng.randint(1000, 9999))}
            values["P2"] = rng.choice([p for p in PEOPLE if p != values["P"]])
            text = template
            for key in sorted(values, key=len, reverse=True):
                text = text.replace("{" + key + "}", values[key])
            out.append((text, [values[k] for k in keys.split()]))
    return out


if __name__ == "__main__":
    for name, templates in (("names_numbers.tsv", TEMPLATES), ("names_numbers_de.tsv", TEMPLATES_DE)):
        lines = ["# sentence\tentities its translation must keep (names, places, numbers, clock times), '|'-separated",
                 "# Our own sentences, written by tests/data/make_names_numbers.py; never training data."]
        lines += [f"{text}\t{'|'.join(entities)}" for text, entities in rows(templates=templates)]
        Path(__file__).with_name(name).write_text("\n".join(lines) + "\n", encoding="utf-8")
